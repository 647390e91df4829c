#!/usr/bin/python3
"""tests/servers/fake_openai.py: a loopback OpenAI-compatible chat-completions server for the
tests and benchmarks of the `openai` backend (sim/openai.c). Standard library only.

    /usr/bin/python3 tests/servers/fake_openai.py --port-file P [--latency-ms 100]
        [--log requests.jsonl] [--lifetime 60] [--loading-s 0]

Binds 127.0.0.1 only, port 0 (the kernel picks a free one); prints the port on the first line
of stdout and, with --port-file, writes it there atomically. Exits by itself after --lifetime
seconds, whatever its handler threads are doing.

Endpoints
  POST .../chat/completions  a deterministic reply derived from the request body:
        text "fake reply <sha12>: read <W> words. The answer is (<answer>)."
        usage.prompt_tokens = whitespace-separated words over all message contents,
        usage.completion_tokens = words of the text.
  GET  /stats   {"hits", "max_concurrent", "current", "connections" (TCP connections
                that carried chat requests), "actions": {action: count}}
  POST /reset   zeroes the counters and forgets attempt counts
  GET  /health  200
  GET  .../models  {"object":"list","data":[{"id":"fake-model",...}]}
With --loading-s S, every path answers 503 {"error":{"code":503,"message":"Loading model",
"type":"unavailable_error"}} for the first S seconds after start (llama-server while it loads).

Misbehaviour is asked for per request by a directive, in the header `X-Fake` (set through the
endpoint's `headers` config) or in any message content as `[[fake:...]]` (the content wins).
A directive is `key=value` pairs separated by ';' or ','. Attempts are counted per distinct
request body, so `fail=500;times=2` fails the first two attempts of each request and then
answers normally; `times=always` never recovers.
  fail=429|500|503|400|401|408|hang|malformed|drop|partial|echo_auth|nocontent|reasoning|big|
       empty_reasoning|empty_ollama|blank|refusal
      429/5xx/4xx: that status with an OpenAI-style error object ("fake <status> error")
      hang: read the request, send nothing for hang_s seconds (default 5), close
      malformed: 200 with a truncated JSON body      drop: close without answering
      partial: headers announce 400 bytes, 20 arrive, close
      echo_auth: 400 whose error message quotes the Authorization header it received
      nocontent: 200, message.content null        reasoning: content null + reasoning_content
      big: 200 with a 9 MiB content string
      empty_reasoning: content "" + reasoning_content (llama-server)
      empty_ollama: content "" + reasoning (Ollama)      blank: content " \n" + reasoning_content
      refusal: content null + refusal "I can't help with that." (OpenAI), finish_reason stop
  Every reply carries "model" (the request's, else "fake-model") and
  "system_fingerprint": "fp_fake".
  retry_after=<value>      Retry-After header on failures ("date+N" = an HTTP date N s ahead)
  retry_after_ms=<value>   retry-after-ms header on failures
  should_retry=true|false  x-should-retry header on failures
  latency_ms=<n>           delay before answering (default --latency-ms)
  answer=<token>           the letter/number in the reply text (default A)
  ranking=<ids>            append a line "RANKING: <ids>" to the reply (ids separated by
                           spaces, written comma-separated: the LLM-judge baseline's format)
Every chat request is logged (with --log) as one JSON line: t, path, headers, body, key,
attempt, action.
"""
import argparse
import email.utils
import hashlib
import http.server
import json
import os
import re
import socket
import sys
import threading
import time

DIRECTIVE = re.compile(r"\[\[fake:([^\]]*)\]\]")


class State:
    def __init__(self, latency_ms, log_path):
        self.lock = threading.Lock()
        self.latency_ms = latency_ms
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.reset()

    def reset(self):
        self.hits = 0
        self.connections = 0
        self.current = 0
        self.max_concurrent = 0
        self.attempts = {}
        self.actions = {}


def parse_directive(text):
    d = {}
    for part in re.split(r"[;,]", text or ""):
        if "=" in part:
            k, v = part.split("=", 1)
            d[k.strip()] = v.strip()
    return d


def words(s):
    return len(s.split())


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1"

    def setup(self):
        super().setup()
        self.counted = False
        # headers and body leave in two writes: without NODELAY the second waits for the
        # client's delayed ACK (~40 ms), which would swamp the latencies we measure
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_json(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def loading(self):
        if time.time() < self.server.ready_at:
            self.send_json(503, {"error": {"code": 503, "message": "Loading model",
                                           "type": "unavailable_error"}})
            return True
        return False

    def do_GET(self):
        st = self.server.state
        if self.loading():
            return
        if self.path == "/stats":
            with st.lock:
                obj = {"hits": st.hits, "max_concurrent": st.max_concurrent,
                       "connections": st.connections,
                       "current": st.current, "actions": dict(st.actions)}
            self.send_json(200, obj)
        elif self.path == "/health":
            self.send_json(200, {"status": "ok"})
        elif self.path.endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "owned_by": "fake"}]})
        else:
            self.send_json(404, {"error": {"message": "no such path"}})

    def do_POST(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        if self.loading():
            return
        if self.path == "/reset":
            with st.lock:
                st.reset()
            self.send_json(200, {"ok": True})
            return
        if not self.path.endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": "no such path " + self.path}})
            return
        with st.lock:
            if not self.counted:  # first chat request on this TCP connection
                self.counted = True
                st.connections += 1
            st.hits += 1
            st.current += 1
            st.max_concurrent = max(st.max_concurrent, st.current)
        try:
            self.chat(st, raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with st.lock:
                st.current -= 1

    def chat(self, st, raw):
        key = hashlib.sha256(raw).hexdigest()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        directive = parse_directive(self.headers.get("X-Fake"))
        if isinstance(body, dict):
            for m in body.get("messages") or []:
                c = m.get("content") if isinstance(m, dict) else None
                if isinstance(c, str):
                    for found in DIRECTIVE.findall(c):
                        directive.update(parse_directive(found))
        with st.lock:
            attempt = st.attempts.get(key, 0) + 1
            st.attempts[key] = attempt
        fail = directive.get("fail")
        times = directive.get("times", "1")
        failing = fail is not None and (times == "always" or attempt <= int(times))
        action = fail if failing else "ok"
        if body is None and not failing:
            action = "bad_request"
        with st.lock:
            st.actions[action] = st.actions.get(action, 0) + 1
        if st.log:
            rec = {"t": time.time(), "path": self.path,
                   "headers": {k.lower(): v for k, v in self.headers.items()},
                   "body": body if body is not None else raw.decode("utf-8", "replace"),
                   "key": key, "attempt": attempt, "action": action}
            with st.lock:
                st.log.write(json.dumps(rec) + "\n")
        latency = float(directive.get("latency_ms", st.latency_ms)) / 1000.0
        if latency > 0:
            time.sleep(latency)
        if action == "bad_request":
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        if not failing:
            self.reply(body, key, directive)
            return
        extra = {}
        if "retry_after" in directive:
            v = directive["retry_after"]
            if v.startswith("date+"):
                v = email.utils.formatdate(time.time() + float(v[5:]), usegmt=True)
            extra["Retry-After"] = v
        if "retry_after_ms" in directive:
            extra["retry-after-ms"] = directive["retry_after_ms"]
        if "should_retry" in directive:
            extra["x-should-retry"] = directive["should_retry"]
        if fail.isdigit():
            status = int(fail)
            self.send_json(status, {"error": {"message": "fake %d error" % status,
                                              "type": "fake_error", "code": status}}, extra)
        elif fail == "echo_auth":
            auth = self.headers.get("Authorization", "(none)")
            self.send_json(400, {"error": {"message": "bad key in header: " + auth}}, extra)
        elif fail == "hang":
            time.sleep(float(directive.get("hang_s", "5")))
            self.close_connection = True
        elif fail == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fail == "partial":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "400")
            self.end_headers()
            self.wfile.write(b'{"choices": [{"message"')
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fail == "malformed":
            data = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "tru'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif fail in ("nocontent", "reasoning", "empty_reasoning", "empty_ollama", "blank",
                      "refusal"):
            content = {"empty_reasoning": "", "empty_ollama": "", "blank": " \n"}.get(fail)
            msg = {"role": "assistant", "content": content}
            finish = "length"
            if fail in ("reasoning", "empty_reasoning", "blank"):
                msg["reasoning_content"] = "thinking it over. The answer is (C)."
            elif fail == "empty_ollama":
                msg["reasoning"] = "thinking it over. The answer is (D)."
            elif fail == "refusal":
                msg["refusal"] = "I can't help with that."
                finish = "stop"
            self.send_json(200, {"model": (body or {}).get("model") or "fake-model",
                                 "system_fingerprint": "fp_fake",
                                 "choices": [{"index": 0, "message": msg,
                                              "finish_reason": finish}]})
        elif fail == "big":
            self.reply(body, key, directive, pad=9 << 20)
        else:
            self.send_json(500, {"error": {"message": "unknown fake failure " + fail}})

    def reply(self, body, key, directive, pad=0):
        msgs = body.get("messages") or [] if isinstance(body, dict) else []
        n_words = sum(words(m.get("content") or "") for m in msgs if isinstance(m, dict))
        text = "fake reply %s: read %d words. The answer is (%s)." % (
            key[:12], n_words, directive.get("answer", "A"))
        if "ranking" in directive:
            text += "\nRANKING: " + ", ".join(directive["ranking"].split())
        if pad:
            text += " " + "x" * pad
        obj = {"id": "chatcmpl-fake-" + key[:8], "object": "chat.completion",
               "created": int(time.time()), "model": body.get("model") or "fake-model",
               "system_fingerprint": "fp_fake",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": n_words, "completion_tokens": words(text),
                         "total_tokens": n_words + words(text)}}
        self.send_json(200, obj)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # clients that go away (timeouts, aborted big replies) are expected here


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--log")
    ap.add_argument("--loading-s", type=float, default=0.0,
                    help="answer 503 'Loading model' on every path for this many seconds")
    ap.add_argument("--lifetime", type=float, default=60.0,
                    help="exit after this many seconds (default 60)")
    a = ap.parse_args()
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.state = State(a.latency_ms, a.log)
    srv.ready_at = time.time() + a.loading_s
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    print(port, flush=True)
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    try:
        srv.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
