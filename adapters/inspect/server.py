"""The inspector's HTTP server: the standard library's ThreadingHTTPServer on loopback.

It answers only requests addressed to the loopback name it listens on (a page from
another site cannot reach it through DNS rebinding), sends every page with a
Content-Security-Policy that allows no script and no outside resource, and turns every
failure into a page: 400 for a bad parameter, 403 for a refused change, 404 for an
unknown namespace, memory or address, 503 when the store cannot be reached, and a plain
500 (the traceback goes to the server's log, never to the page).
"""

from __future__ import annotations

import ipaddress
import sys
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from reverie.adapters.inspect.pages import HttpError, Inspector, Response
from reverie.core.engine import MemoryEngine
from reverie.core.errors import BackendUnavailable, InvalidInput, NotFound, ReverieError

__all__ = ["InspectorServer", "make_server", "serve"]

MAX_FORM_BYTES = 16_384
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SECURITY_HEADERS = (
    ("Content-Security-Policy",
     "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
     "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
)


class InspectorServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that carries its `Inspector`; `url` is where it answers."""

    daemon_threads = True
    inspector: Inspector

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: InspectorServer
    server_version = "reverie-inspect"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def do_GET(self) -> None:
        self._serve(lambda ins, path, params: ins.get(path, params), params_from_query=True)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        self._serve(lambda ins, path, params: ins.post(path, params), params_from_query=False)

    def _serve(
        self,
        run: Callable[[Inspector, str, dict[str, list[str]]], Response],
        *,
        params_from_query: bool,
    ) -> None:
        inspector = self.server.inspector
        try:
            self._check_host()
            parts = urlsplit(self.path)
            if params_from_query:
                params = parse_qs(parts.query, keep_blank_values=True)
            else:
                params = self._form()
            response = run(inspector, parts.path or "/", params)
        except HttpError as e:
            response = inspector.error_page(e)
        except NotFound as e:
            response = inspector.error_page(HttpError(404, "Not found", str(e)))
        except InvalidInput as e:
            response = inspector.error_page(HttpError(400, "Bad request", str(e)))
        except BackendUnavailable as e:
            response = inspector.error_page(HttpError(503, "Store unavailable", str(e)))
        except ReverieError as e:
            response = inspector.error_page(HttpError(409, "Refused", str(e)))
        except Exception:
            traceback.print_exc(file=sys.stderr)
            response = inspector.error_page(HttpError(
                500, "Internal error",
                "the inspector failed on this page; the details are in its terminal",
            ))
        self._send(response)

    def _check_host(self) -> None:
        """Loopback names only: DNS rebinding would send another name here."""
        host = (self.headers.get("Host") or "").strip()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK_NAMES:
            raise HttpError(421, "Wrong host", "the inspector answers on loopback names only")
        if self.command == "POST":
            origin = self.headers.get("Origin")
            if origin not in (None, "null") and urlsplit(origin).netloc != host:
                raise HttpError(403, "Refused", "a change must come from the inspector's page")

    def _form(self) -> dict[str, list[str]]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise HttpError(400, "Bad request", "bad Content-Length") from None
        if length < 0 or length > MAX_FORM_BYTES:
            raise HttpError(400, "Bad request", "the form is too large")
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype != "application/x-www-form-urlencoded":
            raise HttpError(400, "Bad request", "send the form as a browser does (urlencoded)")
        raw = self.rfile.read(length).decode("utf-8", errors="replace")
        return parse_qs(raw, keep_blank_values=True)

    def _send(self, response: Response) -> None:
        body = response.body.encode("utf-8")
        self.send_response(response.status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (*SECURITY_HEADERS, *response.headers):
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def make_server(
    engine: MemoryEngine,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_changes: bool = False,
    page_size: int = 50,
    scan_limit: int = 20_000,
    verbose: bool = False,
) -> InspectorServer:
    """An inspector bound to `host`:`port` (0: a free port), not yet serving. `host` must
    be a loopback address: memory is private, and the pages have no login."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise InvalidInput(f"the inspector listens on loopback only (127.0.0.1), not {host!r}")
    inspector = Inspector(
        engine, allow_changes=allow_changes, page_size=page_size, scan_limit=scan_limit
    )
    try:
        server = InspectorServer((host, port), _Handler)
    except OSError as e:
        raise InvalidInput(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    server.inspector = inspector
    server.verbose = verbose  # type: ignore[attr-defined]
    return server


def serve(
    engine: MemoryEngine,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_changes: bool = False,
    ready: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Serve until interrupted (or until `stop` is set); `ready(url)` is called once the
    server listens."""
    server = make_server(engine, host=host, port=port, allow_changes=allow_changes)
    with server:
        if ready is not None:
            ready(server.url)
        if stop is None:
            server.serve_forever()
            return
        worker = threading.Thread(target=server.serve_forever, daemon=True)
        worker.start()
        stop.wait()
        server.shutdown()
        worker.join()
