"""A scripted model server on 127.0.0.1 for the real agent clients, run offline: the
Anthropic Messages API (`POST /v1/messages`, SSE) for Claude Code and the OpenAI Responses
API (`POST /v1/responses`, SSE) for Codex. Every request is recorded, so a test reads what
the model received after an answer (the `tool_result`, the `function_call_output`): the
oracle of every scenario.

A script is a list of steps, one per model turn; a step is a tool call, given as
`(name, input)` or as a function of the request body returning that (a plan's path is
only known from the request). The step a request asks for is the number of the model's turns
since the person's last prompt, so a client that repeats a request gets the same answer and
one client serves scenario after scenario; past the script the model ends its turn with a
line of text.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DONE_TEXT = "Done."


class Request:
    def __init__(self, path, body, at):
        self.path = path
        self.body = body
        self.at = at  # time.monotonic() when it arrived
        self.reply = None  # the tool the model called, or DONE_TEXT: its turn ended

    # --- Claude (Messages API) ---------------------------------------------------------
    def messages(self):
        return self.body.get("messages", [])

    def tool_results(self):
        """Every tool_result block of the request's last user message: (tool_use_id, text,
        is_error)."""
        return self.all_tool_results(self.messages()[-1:])

    def all_tool_results(self, messages=None):
        """Every tool_result block of the conversation the request carries: a tool call the
        person refused at the terminal ends the turn, and its result reaches the model only
        with the next prompt."""
        out = []
        for message in self.messages() if messages is None else messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") != "tool_result":
                    continue
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                out.append((block.get("tool_use_id"), inner or "", bool(block.get("is_error"))))
        return out

    def text(self):
        """Everything the request carries as text (system prompt and messages), for finding
        what the client told the model, such as the plan file's path."""
        return json.dumps(self.body)

    # --- Codex (Responses API) ---------------------------------------------------------
    def function_outputs(self):
        """The request's function_call_output items: (call_id, output)."""
        out = []
        for item in self.body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                if isinstance(output, dict):
                    output = output.get("content", json.dumps(output))
                elif isinstance(output, list):
                    output = "".join(o.get("text", "") for o in output if isinstance(o, dict))
                out.append((item.get("call_id"), output))
        return out


def is_tool_results(message):
    """A user message that only carries tool results (and the client's reminders beside
    them) continues the model's turn; any other user message is a new prompt."""
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content
                                              if isinstance(b, dict))


def is_reminder(item):
    """Codex's own user-role context (environment, instructions), not the person's words."""
    text = json.dumps(item.get("content"))
    return "<environment_context>" in text or "<user_instructions>" in text or "AGENTS.md" in text


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ModelServer:
    """Started on an ephemeral port; `url` for Claude's ANTHROPIC_BASE_URL, `url + "/v1"`
    for Codex's provider. `script(steps, verdict=…)` sets the next scenario's turns."""

    def __init__(self):
        self.lock = threading.Condition()
        self.requests = []
        self.steps = []
        self.verdict = None
        self.ids = 0
        self.issued = []  # (name, tool use id / call id), in the order the model asked
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                self.do_HEAD()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unreadable": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0]
                request = Request(self.path, body, time.monotonic())
                chunks = None
                if path.endswith("/messages"):
                    chunks = server.claude_turn(request)
                elif path.endswith("/responses"):
                    chunks = server.codex_turn(request)
                with server.lock:
                    server.requests.append(request)
                    server.lock.notify_all()
                if chunks is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                payload = b"".join(chunks)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, steps, verdict=None):
        """The next scenario: its tool calls in order, and for Claude's auto mode the
        safeguard verdict (`not_flagged` / `flagged`) every tool use gets."""
        with self.lock:
            self.steps = list(steps)
            self.verdict = verdict

    def since(self, mark):
        with self.lock:
            return self.requests[mark:]

    def mark(self):
        with self.lock:
            return len(self.requests)

    def wait_request(self, pred, mark, timeout):
        """The first request after `mark` that satisfies pred, or None at the timeout."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for r in self.requests[mark:]:
                    if pred(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)

    def issued_since(self, count):
        with self.lock:
            return self.issued[count:]

    def result(self, tool_id, mark, timeout):
        """What the model received for the tool call `tool_id` in the first request after
        `mark` that carries it: (text, is_error) for Claude, (output, None) for Codex; None
        when no request brought it within the timeout."""
        def carries(r):
            return any(i == tool_id for i, *_ in r.all_tool_results()) or \
                any(i == tool_id for i, _ in r.function_outputs())
        r = self.wait_request(carries, mark, timeout)
        if r is None:
            return None
        for i, text, error in r.all_tool_results():
            if i == tool_id:
                return text, error
        return next(out for i, out in r.function_outputs() if i == tool_id), None

    def next_id(self, prefix):
        with self.lock:
            self.ids += 1
            return f"{prefix}{self.ids:04d}"

    def step_for(self, done, request):
        if done >= len(self.steps):
            return None
        step = self.steps[done]
        return step(request) if callable(step) else step

    # --- Claude ------------------------------------------------------------------------
    def claude_turn(self, request):
        done = 0
        for m in reversed(request.messages()):
            if m.get("role") == "assistant":
                done += 1
            elif not is_tool_results(m):
                break
        step = self.step_for(done, request)
        model = request.body.get("model", "claude-sonnet-4-5")
        usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        out = [sse("message_start", {"type": "message_start", "message": {
            "id": self.next_id("msg_"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
            sse("ping", {"type": "ping"})]
        delta = {"stop_sequence": None}
        request.reply = step[0] if step else DONE_TEXT
        if step is None:
            out += [sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}),
                    sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": DONE_TEXT}}),
                    sse("content_block_stop", {"type": "content_block_stop", "index": 0})]
            delta["stop_reason"] = "end_turn"
        else:
            name, tool_input = step
            tool_id = self.next_id("toolu_agents")
            with self.lock:
                self.issued.append((name, tool_id))
            out += [sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "tool_use", "id": tool_id,
                                                                  "name": name, "input": {}}}),
                    sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "input_json_delta",
                                                          "partial_json": json.dumps(tool_input)}}),
                    sse("content_block_stop", {"type": "content_block_stop", "index": 0})]
            delta["stop_reason"] = "tool_use"
            if self.verdict:
                delta["safeguard_results"] = [{"type": "dangerous_tool_use", "status": {
                    "type": "available", "tool_uses": {tool_id: {
                        "type": "evaluated", "outcome": self.verdict,
                        "explanation": f"scripted: {self.verdict}"}}}}]
        out += [sse("message_delta", {"type": "message_delta", "delta": delta,
                                      "usage": {"output_tokens": 5}}),
                sse("message_stop", {"type": "message_stop"})]
        return out

    # --- Codex -------------------------------------------------------------------------
    def codex_turn(self, request):
        done = 0
        for item in reversed(request.body.get("input", [])):
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                done += 1
            elif item.get("type") == "message" and item.get("role") == "user" and not is_reminder(item):
                break
        step = self.step_for(done, request)
        rid = self.next_id("resp_")
        request.reply = step[0] if step else DONE_TEXT
        out = [sse("response.created", {"type": "response.created", "response": {"id": rid}})]
        if step is None:
            item = {"type": "message", "role": "assistant", "id": self.next_id("msg_"),
                    "content": [{"type": "output_text", "text": DONE_TEXT}]}
        else:
            name, arguments = step
            call_id = self.next_id("call_")
            with self.lock:
                self.issued.append((name, call_id))
            item = {"type": "function_call", "id": self.next_id("fc_"), "call_id": call_id,
                    "name": name, "arguments": json.dumps(arguments)}
        out += [sse("response.output_item.added", {"type": "response.output_item.added",
                                                   "output_index": 0, "item": item}),
                sse("response.output_item.done", {"type": "response.output_item.done",
                                                  "output_index": 0, "item": item}),
                sse("response.completed", {"type": "response.completed", "response": {
                    "id": rid, "usage": {"input_tokens": 10, "input_tokens_details": None,
                                         "output_tokens": 5, "output_tokens_details": None,
                                         "total_tokens": 15}}})]
        return out
