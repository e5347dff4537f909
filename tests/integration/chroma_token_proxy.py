"""A token-checking HTTP proxy in front of a real Chroma server, as a reverse proxy
(nginx, a gateway) guards one in production: requests without `Authorization: Bearer
TOKEN` get 401, a wrong token 403; the rest are forwarded unchanged."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["TokenProxy"]


class TokenProxy:
    """Serve on a free loopback port until `stop()`; `url` is where to point clients."""

    def __init__(self, upstream: str, token: str) -> None:
        target = urlsplit(upstream)
        host, port = target.hostname or "127.0.0.1", target.port or 8000
        expected = f"Bearer {token}"
        self.refused = 0

        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                given = self.headers.get("Authorization")
                if given != expected:
                    proxy.refused += 1
                    status = 401 if given is None else 403
                    text = b"Unauthorized" if status == 401 else b"Forbidden"
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "authorization")}
                conn = http.client.HTTPConnection(host, port, timeout=60)
                try:
                    conn.request(self.command, self.path, body, headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
