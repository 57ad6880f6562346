"""A stand-in for an ntfy server, written from ntfy's documentation (docs.ntfy.sh: publish,
subscribe/api, config's access control) and its Android app's `http` action.

Publishing: `PUT`/`POST /<topic>` with the message as the body and the rest in headers —
`Title` (`X-Title`, `t`), `Priority` (`X-Priority`, `p`: 1–5 or min/low/default/high/max/
urgent), `Tags` (`X-Tags`, `ta`: comma-separated), `Markdown` (`X-Markdown`, `md`),
`X-Sequence-ID` (`Sequence-ID`, `sid`), `Authorization: Bearer <token>`; RFC 2047 encoded
words in Title and Tags (ntfy 2.4+). Or JSON to the root URL (`POST /`, the topic inside:
`topic`, `message`, `title`, `tags`, `priority`, `markdown`, `actions`, `sequence_id`), at
most three actions, an `http` action needing a `url` (method POST unless told). A message
published with the sequence id of an earlier one replaces that card (ntfy 2.16+, Android
1.22+); `/<topic>/<sequence id>` says the same.

Subscribing: `GET /<topic>/json` streams one JSON object a line — an `open` event, then the
cached messages after `since=` (a message id, a unix time, or `all`), then each new one as
it comes, and a `keepalive` event when nothing was sent for `keepalive` seconds (ntfy: 45);
`poll=1` sends the cached ones and ends.

Access: users with tokens and per-topic rights (`rw`, `ro`, `wo`), and what anyone without
a login may do per topic (ntfy's `auth-default-access: deny-all` unless told): 401 for an
unknown token, 403 for a right not granted.

ntfy itself cannot be installed here (no download beyond package registries); this keeps
every request it took, every subscription and every message it streamed to whom, for the
checks to read.
"""

import email.header
import json
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PRIORITIES = {"1": 1, "min": 1, "2": 2, "low": 2, "3": 3, "default": 3, "4": 4, "high": 4,
              "5": 5, "max": 5, "urgent": 5}
# ntfy shows at most three actions on a message and refuses more.
MAX_ACTIONS = 3


def header(headers, *names):
    for name in names:
        value = headers.get(name)
        if value is not None:
            return decode(value)
    return None


def decode(value):
    """RFC 2047 encoded words as ntfy decodes them; plain text as it came."""
    if "=?" not in value:
        return value
    parts = email.header.decode_header(value)
    return "".join(p.decode(c or "utf-8") if isinstance(p, bytes) else p for p, c in parts)


class Refused(Exception):
    def __init__(self, status, code, error):
        super().__init__(error)
        self.status, self.code, self.error = status, code, error


class Ntfy:
    """One server on 127.0.0.1:`port` (0: any free one). `token` is the owner's: it may read
    and write every topic. Anyone else may do only what `add_user` and `everyone` grant."""

    def __init__(self, token, port=0, keepalive=45):
        self.token = token
        self.port = port
        self.keepalive = keepalive
        self.tokens = {token: "owner"}      # token → user
        self.rights = {"owner": {"*": "rw"}}  # user → topic → rw/ro/wo
        self.anonymous = {}                 # topic → rw/ro/wo for anyone without a login
        self.messages = []   # every message accepted, oldest first
        self.refused = []    # every request refused, with why
        self.subscriptions = []  # every GET /<topic>/json taken: who, since, when, open
        self.streamed = []   # (subscription index, message id) for each message sent on one
        self.connections = 0
        self.cut_off = False  # subscriptions closed and refused while set; publishing works
        self.lock = threading.Condition()
        self.server = None
        self.streams = set()

    def url(self, topic):
        return f"http://127.0.0.1:{self.port}/{topic}"

    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def add_user(self, name, token, rights):
        """A user with `token` and its rights per topic, as `ntfy user add` + `ntfy token
        add` + `ntfy access <user> <topic> <rw|ro|wo>` make them."""
        with self.lock:
            self.tokens[token] = name
            self.rights[name] = dict(rights)

    def everyone(self, topic, right):
        """What anyone without a login may do on `topic` (`ntfy access everyone …`)."""
        with self.lock:
            self.anonymous[topic] = right

    def may(self, auth, topic, want):
        """Whether `auth` (the Authorization header or None) may `want` ('r'/'w') on topic;
        raises Refused as ntfy answers."""
        if auth is None:
            right = self.anonymous.get(topic, "")
        elif not auth.startswith("Bearer ") or auth[7:] not in self.tokens:
            raise Refused(401, 40101, "unauthorized")
        else:
            rights = self.rights.get(self.tokens[auth[7:]], {})
            right = rights.get(topic, rights.get("*", ""))
        if want not in {"rw": "rw", "ro": "r", "wo": "w"}.get(right, ""):
            raise Refused(403, 40301, "forbidden")

    def start(self):
        ntfy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_PUT(self):
                self.publish()

            def do_POST(self):
                self.publish()

            def do_GET(self):
                self.subscribe()

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def refuse(self, status, code, error):
                with ntfy.lock:
                    ntfy.refused.append({"status": status, "error": error, "method": self.command,
                                         "path": self.path, "headers": dict(self.headers)})
                self.answer(status, {"code": code, "http": status, "error": error})

            def publish(self):
                try:
                    self.accept(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                except Refused as e:
                    self.refuse(e.status, e.code, e.error)

            def accept(self, raw):
                received = time.monotonic()
                path = self.path.split("?")[0].strip("/")
                auth = self.headers.get("Authorization")
                if path == "":
                    fields = self.json_fields(raw)
                else:
                    fields = self.header_fields(raw.decode("utf-8", errors="replace"))
                    parts = path.split("/")
                    if len(parts) > 2:
                        raise Refused(404, 40401, "page not found")
                    fields["topic"] = parts[0]
                    if len(parts) == 2:
                        fields["sequence_id"] = parts[1]
                topic = fields["topic"]
                if not topic:
                    raise Refused(404, 40401, "page not found")
                ntfy.may(auth, topic, "w")
                message = {
                    "id": secrets.token_hex(6),
                    "time": int(time.time()),
                    "event": "message",
                    "topic": topic,
                    "message": fields.get("message") or "",
                    "title": fields.get("title"),
                    "priority": fields.get("priority") or 3,
                    "tags": fields.get("tags") or [],
                    "markdown": bool(fields.get("markdown")),
                    "actions": fields.get("actions") or [],
                    "sequence_id": fields.get("sequence_id"),
                }
                with ntfy.lock:
                    ntfy.messages.append(dict(message, received=received, method=self.command,
                                              path=self.path, headers=dict(self.headers)))
                    ntfy.lock.notify_all()
                self.answer(200, {k: v for k, v in message.items() if v not in (None, [], False)})

            def header_fields(self, body):
                priority = header(self.headers, "X-Priority", "Priority", "prio", "p") or "3"
                if priority.lower() not in PRIORITIES:
                    raise Refused(400, 40007, "invalid priority")
                tags = header(self.headers, "X-Tags", "Tags", "tag", "ta")
                return {
                    "message": body,
                    "title": header(self.headers, "X-Title", "Title", "ti", "t"),
                    "priority": PRIORITIES[priority.lower()],
                    "tags": [t.strip() for t in tags.split(",")] if tags else [],
                    "markdown": (header(self.headers, "X-Markdown", "Markdown", "md") or "")
                    .lower() in ("yes", "true", "1"),
                    "sequence_id": header(self.headers, "X-Sequence-ID", "Sequence-ID", "sid"),
                }

            def json_fields(self, raw):
                try:
                    fields = json.loads(raw)
                except ValueError:
                    raise Refused(400, 40024, "invalid request: body must be JSON")
                if not isinstance(fields, dict) or not isinstance(fields.get("topic"), str):
                    raise Refused(400, 40024, "invalid request: topic missing")
                priority = fields.get("priority", 3)
                if priority not in range(1, 6):
                    raise Refused(400, 40007, "invalid priority")
                actions = fields.get("actions") or []
                if len(actions) > MAX_ACTIONS:
                    raise Refused(400, 40018, "invalid request: too many actions")
                for action in actions:
                    if action.get("action") not in ("view", "http", "broadcast") \
                            or not action.get("label"):
                        raise Refused(400, 40018, "invalid request: action invalid")
                    if action["action"] in ("view", "http") and not action.get("url"):
                        raise Refused(400, 40018, "invalid request: action needs a url")
                    if action["action"] == "http":
                        action.setdefault("method", "POST")
                sequence = header(self.headers, "X-Sequence-ID", "Sequence-ID", "sid")
                return dict(fields, actions=actions, priority=priority,
                            sequence_id=fields.get("sequence_id") or sequence)

            def subscribe(self):
                path, _, query = self.path.partition("?")
                parts = path.strip("/").split("/")
                if len(parts) != 2 or parts[1] != "json":
                    return self.refuse(404, 40401, "page not found")
                topic = parts[0]
                params = dict(p.partition("=")[::2] for p in query.split("&") if p)
                try:
                    ntfy.may(self.headers.get("Authorization"), topic, "r")
                except Refused as e:
                    return self.refuse(e.status, e.code, e.error)
                poll = params.get("poll") in ("1", "true", "yes")
                with ntfy.lock:
                    index = len(ntfy.subscriptions)
                    ntfy.subscriptions.append({
                        "topic": topic, "since": params.get("since"), "poll": poll,
                        "auth": self.headers.get("Authorization"), "opened": time.monotonic(),
                        "closed": None})
                try:
                    self.stream(index, topic, params.get("since"), poll)
                except OSError:
                    pass
                finally:
                    with ntfy.lock:
                        ntfy.subscriptions[index]["closed"] = time.monotonic()
                        ntfy.streams.discard(self.connection)
                        ntfy.lock.notify_all()

            def stream(self, index, topic, since, poll):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson; charset=utf-8")
                self.end_headers()

                def line(event):
                    self.wfile.write((json.dumps(event) + "\n").encode())
                    self.wfile.flush()

                # The subscriber hanging up is seen at once, as ntfy (Go's server) sees it,
                # not at the next keepalive written into a closed socket.
                gone = []

                def watch(conn=self.connection):
                    try:
                        while conn.recv(1024):
                            pass
                    except OSError:
                        pass
                    with ntfy.lock:
                        gone.append(True)
                        ntfy.lock.notify_all()
                threading.Thread(target=watch, daemon=True).start()
                with ntfy.lock:
                    if ntfy.cut_off:
                        return
                    ntfy.streams.add(self.connection)
                    sent = ntfy.after(topic, since)
                    pending = [m for m in ntfy.messages if m["topic"] == topic][sent:]
                if not poll:
                    line({"id": secrets.token_hex(6), "time": int(time.time()), "event": "open",
                          "topic": topic})
                while True:
                    for m in pending:
                        line(ntfy.event(m))
                        with ntfy.lock:
                            ntfy.streamed.append((index, m["id"]))
                    sent += len(pending)
                    if poll:
                        return
                    with ntfy.lock:
                        deadline = time.monotonic() + ntfy.keepalive
                        while True:
                            if ntfy.cut_off or ntfy.server is None or gone:
                                return
                            pending = [m for m in ntfy.messages if m["topic"] == topic][sent:]
                            if pending or time.monotonic() >= deadline:
                                break
                            ntfy.lock.wait(deadline - time.monotonic())
                    if not pending:
                        line({"id": secrets.token_hex(6), "time": int(time.time()),
                              "event": "keepalive", "topic": topic})

        class Server(ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

            def get_request(self):
                conn = super().get_request()
                with ntfy.lock:
                    ntfy.connections += 1
                return conn

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def after(self, topic, since):
        """How many of the topic's cached messages come before `since` (an id, a unix time,
        `all`, or none: only new ones)."""
        cached = [m for m in self.messages if m["topic"] == topic]
        if since in (None, ""):
            return len(cached)
        if since == "all":
            return 0
        ids = [m["id"] for m in cached]
        if since in ids:
            return ids.index(since) + 1
        if since.isdigit():
            return len([m for m in cached if m["time"] < int(since)])
        return len(cached)

    @staticmethod
    def event(message):
        return {k: v for k, v in message.items()
                if k not in ("received", "method", "path", "headers") and v not in (None, [], False)}

    def drop_streams(self):
        with self.lock:
            for conn in list(self.streams):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.streams.clear()
            self.lock.notify_all()

    def cut(self):
        """The link to subscribers cut: each open stream ends, and new ones end at once
        (after their headers) until `mend`; publishing still works, as a phone on another
        network still reaches the server."""
        with self.lock:
            self.cut_off = True
        self.drop_streams()

    def mend(self):
        with self.lock:
            self.cut_off = False

    def stop(self):
        """Down: nothing listens on the port until `start` (the same port again)."""
        if self.server is not None:
            server, self.server = self.server, None
            self.drop_streams()
            server.shutdown()
            server.server_close()

    def taken(self):
        with self.lock:
            return list(self.messages)

    def on(self, topic):
        """The messages published to `topic`, oldest first."""
        with self.lock:
            return [m for m in self.messages if m["topic"] == topic]

    def cards(self, topic):
        """What a phone (ntfy for Android ≥ 1.22) shows for `topic`: one card per sequence
        id (a message without one is its own card), the latest message of each."""
        shown = {}
        for m in self.on(topic):
            shown[m["sequence_id"] or m["id"]] = m
        return shown

    def open_subscriptions(self, topic=None):
        with self.lock:
            return [s for s in self.subscriptions
                    if s["closed"] is None and not s["poll"] and topic in (None, s["topic"])]

    def tap(self, action):
        """The phone's ntfy app sending an `http` action: the action's method, URL, headers
        and body as the message wrote them, nothing else (beside what HTTP itself needs and
        the app's User-Agent, as its OkHttp client sends them). Returns (status, body)."""
        import http.client
        import urllib.parse
        url = urllib.parse.urlsplit(action["url"])
        body = (action.get("body") or "").encode()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            conn.putrequest(action.get("method", "POST"), url.path or "/", skip_accept_encoding=True)
            conn.putheader("User-Agent", "ntfy/1.22.0 (fdroid; Android 14; SDK 34)")
            for name, value in (action.get("headers") or {}).items():
                conn.putheader(name, value)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()
