"""A stand-in for an ntfy server's publish API, written from ntfy's documentation
(docs.ntfy.sh/publish): `PUT`/`POST /<topic>` with the message as the body and the rest in
headers — `Title` (`X-Title`, `t`), `Priority` (`X-Priority`, `p`: 1–5 or min/low/default/
high/max/urgent), `Tags` (`X-Tags`, `ta`: comma-separated), `Markdown` (`X-Markdown`,
`md`), `Authorization: Bearer <token>`; RFC 2047 encoded words in Title and Tags (ntfy
2.4+). It answers as ntfy does: 200 with the message as JSON, 401 for a wrong token, 403
without one on a protected topic, 400 for a bad priority.

ntfy itself cannot be installed here (no download beyond package registries); this keeps
every request it took (and every connection it accepted) for the checks to read.
"""

import email.header
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PRIORITIES = {"1": 1, "min": 1, "2": 2, "low": 2, "3": 3, "default": 3, "4": 4, "high": 4,
              "5": 5, "max": 5, "urgent": 5}


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


class Ntfy:
    """One server on 127.0.0.1:`port` (0: any free one) whose topics need `token`."""

    def __init__(self, token, port=0):
        self.token = token
        self.port = port
        self.messages = []   # every message accepted, oldest first
        self.refused = []    # every request refused, with why
        self.connections = 0
        self.lock = threading.Lock()
        self.server = None

    def url(self, topic):
        return f"http://127.0.0.1:{self.port}/{topic}"

    def start(self):
        ntfy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_PUT(self):
                self.publish()

            def do_POST(self):
                self.publish()

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def refuse(self, status, code, error):
                with ntfy.lock:
                    ntfy.refused.append({"status": status, "error": error,
                                         "headers": dict(self.headers)})
                self.answer(status, {"code": code, "http": status, "error": error})

            def publish(self):
                received = time.monotonic()
                topic = self.path.split("?")[0].strip("/")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", errors="replace")
                auth = self.headers.get("Authorization")
                if not topic or "/" in topic:
                    return self.refuse(404, 40401, "page not found")
                if auth is None:
                    return self.refuse(403, 40301, "forbidden")
                if auth != f"Bearer {ntfy.token}":
                    return self.refuse(401, 40101, "unauthorized")
                priority = header(self.headers, "X-Priority", "Priority", "prio", "p") or "3"
                if priority.lower() not in PRIORITIES:
                    return self.refuse(400, 40007, "invalid priority")
                tags = header(self.headers, "X-Tags", "Tags", "tag", "ta")
                message = {
                    "id": secrets.token_hex(6),
                    "time": int(time.time()),
                    "event": "message",
                    "topic": topic,
                    "message": body,
                    "title": header(self.headers, "X-Title", "Title", "ti", "t"),
                    "priority": PRIORITIES[priority.lower()],
                    "tags": [t.strip() for t in tags.split(",")] if tags else [],
                    "markdown": (header(self.headers, "X-Markdown", "Markdown", "md") or "")
                    .lower() in ("yes", "true", "1"),
                }
                with ntfy.lock:
                    ntfy.messages.append(dict(message, received=received, method=self.command,
                                              headers=dict(self.headers)))
                self.answer(200, {k: v for k, v in message.items() if v not in (None, [])})

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

    def stop(self):
        """Down: nothing listens on the port until `start` (the same port again)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def taken(self):
        with self.lock:
            return list(self.messages)
