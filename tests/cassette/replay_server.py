"""A loopback HTTP server that answers from a recorded cassette, for code that runs in
another process (an example in a fresh venv) where vcrpy cannot patch the HTTP client.

Matching is vcrpy's own, with the cassette's rules (method, path, body; each recorded
exchange plays once): the server hands every request to `Cassette.play_response`. A
request the cassette does not hold gets HTTP 400 (which OpenAI clients do not retry) and
is kept in `misses`, so the test fails saying what was asked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vcr.errors import UnhandledHTTPRequestError
from vcr.request import Request

from tests.cassettes import use_cassette

# the recorded bodies were stored decoded, so these no longer describe them
_DROPPED = {"content-encoding", "content-length", "transfer-encoding", "connection"}


class ReplayServer:
    def __init__(self, cassette: Any) -> None:
        self.cassette = cassette
        self.misses: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(
                    self.command, f"http://127.0.0.1{self.path}", body or None,
                    dict(self.headers.items()),
                )
                with server._lock:
                    try:
                        response = server.cassette.play_response(request)
                    except UnhandledHTTPRequestError:
                        server.misses.append((self.command, self.path, body))
                        response = None
                if response is None:
                    payload = b'{"error": {"message": "not in the cassette"}}'
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                payload = response["body"]["string"]
                if isinstance(payload, str):
                    payload = payload.encode()
                self.send_response(response["status"]["code"])
                for name, values in response["headers"].items():
                    if name.lower() in _DROPPED:
                        continue
                    for value in values if isinstance(values, list) else [values]:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)


@contextmanager
def replaying(name: str) -> Iterator[ReplayServer]:
    """Serve `cassettes/<name>.yaml` on a free loopback port while the block runs."""
    with use_cassette(name) as cassette, ReplayServer(cassette) as server:
        yield server
