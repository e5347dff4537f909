"""Real server processes for integration and contract tests.

Integration tests run against the real thing, not mocks: a `chroma run` server
here (a Redis helper can sit beside it, built on the same `ServerProcess`). A server
that cannot start is a broken test environment, so it fails loudly with the tail
of the server's log; it never skips, since a skipped backend test looks green.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "ServerProcess",
    "ServerStartError",
    "chroma_cli",
    "free_port",
    "http_ok",
    "start_chroma",
    "start_llm_server",
]


class ServerStartError(RuntimeError):
    """A test server did not start or did not become ready in time."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def http_ok(url: str, timeout: float = 1.0) -> Callable[[], bool]:
    """A readiness check: `url` answers with HTTP 2xx."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return bool(200 <= r.status < 300)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    return check


class ServerProcess:
    """Start a command, wait until `ready()` is true, stop it (terminate, then kill).

    Output goes to a log file so a failed start can show what the server said.
    Usable as a context manager.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        ready: Callable[[], bool],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        log_path: str | Path | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.ready = ready
        self.env = {**os.environ, **(env or {})}
        self.cwd = str(cwd) if cwd else None
        self.timeout = timeout
        if log_path is None:
            fd, tmp = tempfile.mkstemp(prefix=f"{name}-", suffix=".log")
            os.close(fd)
            log_path = tmp
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen[bytes] | None = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> ServerProcess:
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,  # a Ctrl-C in pytest does not race our stop()
                )
            except OSError as e:
                raise ServerStartError(f"{self.name}: cannot run {self.argv!r}: {e}") from e
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"{self.name} exited with code {self.proc.returncode} before it was "
                    f"ready: {' '.join(self.argv)}\n--- log {self.log_path} ---\n"
                    f"{self.log_tail()}"
                )
            if self.ready():
                return self
            time.sleep(0.1)
        self.stop()
        raise ServerStartError(
            f"{self.name} was not ready after {self.timeout:.0f} s: {' '.join(self.argv)}\n"
            f"--- log {self.log_path} ---\n{self.log_tail()}"
        )

    def stop(self, grace: float = 10.0) -> None:
        """Terminate the process we started (by its pid), killing it after `grace` s."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def chroma_cli() -> str:
    """The `chroma` executable of the chromadb in this interpreter's environment.

    Prefer the one next to `sys.executable`: a `chroma` on PATH may be a pyenv shim
    or belong to another environment with another chromadb version.
    """
    bindir = Path(sys.executable).parent
    for name in ("chroma", "chroma.exe"):
        candidate = bindir / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("chroma")
    if found:
        return found
    raise ServerStartError(
        "the `chroma` command was not found next to "
        f"{sys.executable} nor on PATH; install chromadb in this environment"
    )


def start_chroma(
    path: str | Path, *, port: int | None = None, timeout: float = 60.0
) -> tuple[ServerProcess, str]:
    """Start `chroma run` on 127.0.0.1 storing data in `path`; returns (process, url)."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    Path(path).mkdir(parents=True, exist_ok=True)
    server = ServerProcess(
        "chroma",
        [chroma_cli(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        http_ok(f"{url}/api/v2/heartbeat"),
        env={"CHROMA_ANONYMIZED_TELEMETRY": "False", "ANONYMIZED_TELEMETRY": "False"},
        log_path=Path(path).parent / f"chroma-{port}.log",
        timeout=timeout,
    )
    server.start()
    return server, url


LLM_MODEL_ALIAS = "smollm2-135m"


def start_llm_server(
    model_path: str | Path, *, port: int | None = None, timeout: float = 120.0
) -> tuple[ServerProcess, str]:
    """Start the real local OpenAI-compatible LLM server (llama-cpp-python's server, see
    LOCAL_LLM notes) on 127.0.0.1; returns (process, base_url ending in /v1). Only
    `scripts/record-cassettes` needs it: tests replay what it answered."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}/v1"
    server = ServerProcess(
        "llama.cpp",
        [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
            "--n_threads", "2", "--model_alias", LLM_MODEL_ALIAS,
        ],
        http_ok(f"{base}/models"),
        timeout=timeout,
    )
    server.start()
    return server, base
