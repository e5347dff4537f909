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
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "RedisCluster",
    "ServerProcess",
    "ServerStartError",
    "TlsFiles",
    "chroma_cli",
    "free_cluster_port",
    "free_port",
    "http_ok",
    "make_tls_files",
    "redis_ping",
    "redis_tls_ping",
    "start_chroma",
    "start_llm_server",
    "start_redis",
    "start_redis_cluster",
]


def wait_until(
    condition: Callable[[], object], what: str, timeout: float = 30.0, interval: float = 0.001
) -> None:
    """Poll `condition` until it holds; fail with `what` after `timeout` seconds instead of
    hanging until the suite's global timeout. A bound on waiting, never a speed check."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def outcome_within(call: Callable[[], object], bound: float) -> tuple[object, BaseException | None]:
    """(`call()`'s result, None) or (None, the error it raised). The call runs on a thread
    joined for at most `bound` seconds, so a call that hangs fails the test with a message
    instead of running into the suite's timeout. A bound on waiting, never a speed check."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as e:  # handed to the test
            out["error"] = e

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(bound)
    assert not worker.is_alive(), f"the call did not return within {bound:g} s: it hangs"
    error = out.get("error")
    return out.get("value"), error if isinstance(error, BaseException) else None


@contextmanager
def small_tmpfs(where: Path, size: str = "5m") -> Iterator[Path]:
    """A real tmpfs of `size` mounted at `where` (tests run as root), so a test can fill a
    file system for real; unmounted lazily on exit."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                   check=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


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


# --- Redis ---------------------------------------------------------------------------------


def redis_ping(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> Callable[[], bool]:
    """A readiness check: the server at host:port answers PING (or asks for a password,
    which also means it is up). Plain sockets, so it works without redis-py."""

    def check() -> bool:
        try:
            with socket.create_connection((host, port), timeout=timeout) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                reply = s.recv(64)
        except OSError:
            return False
        return reply.startswith((b"+PONG", b"-NOAUTH"))

    return check


def redis_server_cli() -> str:
    found = shutil.which("redis-server")
    if not found:
        raise ServerStartError(
            "redis-server is not on PATH; install it (apt-get install redis-server) — the "
            "Redis tests need a real server"
        )
    return found


def start_redis(
    path: str | Path,
    *,
    port: int | None = None,
    appendonly: bool = False,
    password: str | None = None,
    tls: TlsFiles | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 30.0,
) -> tuple[ServerProcess, str]:
    """Start a real `redis-server` on 127.0.0.1 (a free port unless given; never 6379 by
    accident) with its files under `path`; returns (process, url such as
    redis://127.0.0.1:PORT/0). No RDB snapshots (`--save ""`); `appendonly=True` turns on
    AOF with fsync on every write, for restart tests. Restart with the same `path` and
    `port` to get the same data back (with AOF). With `tls` (see `make_tls_files`) the
    server speaks only TLS on that port and the URL is rediss://. Fails loudly, never
    skips."""
    port = port or free_port()
    data = Path(path)
    data.mkdir(parents=True, exist_ok=True)
    argv = [
        redis_server_cli(),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(data),
        "--save", "",
        "--appendonly", "yes" if appendonly else "no",
        "--appendfsync", "always",
        "--daemonize", "no",
        "--logfile", "",
    ]
    if password:
        argv += ["--requirepass", password]
    if tls is not None:
        argv[argv.index("--port") + 1] = "0"
        argv += [
            "--tls-port", str(port),
            "--tls-cert-file", str(tls.cert),
            "--tls-key-file", str(tls.key),
            "--tls-ca-cert-file", str(tls.ca),
            "--tls-auth-clients", "no",
        ]
    argv += list(extra_args)
    server = ServerProcess(
        "redis",
        argv,
        redis_ping(port) if tls is None else redis_tls_ping(port, tls.ca),
        log_path=data.parent / f"redis-{port}.log",
        timeout=timeout,
    )
    server.start()
    auth = f":{password}@" if password else ""
    scheme = "redis" if tls is None else "rediss"
    return server, f"{scheme}://{auth}127.0.0.1:{port}/0"


class TlsFiles:
    """A throwaway CA and a server certificate for 127.0.0.1 signed by it (PEM paths)."""

    def __init__(self, ca: Path, cert: Path, key: Path) -> None:
        self.ca, self.cert, self.key = ca, cert, key


def make_tls_files(path: str | Path) -> TlsFiles:
    """Generate a CA and a 127.0.0.1 server certificate with the `openssl` command."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise ServerStartError("openssl is not on PATH; the TLS tests need it to make certificates")
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    ca, ca_key = d / "ca.pem", d / "ca.key"
    cert, key, csr, ext = d / "server.pem", d / "server.key", d / "server.csr", d / "san.cnf"
    ext.write_text("subjectAltName = IP:127.0.0.1, DNS:localhost\n")
    steps = [
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=reverie-test-ca", "-keyout", str(ca_key), "-out", str(ca)],
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(csr)],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert)],
    ]
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ServerStartError(f"openssl failed: {' '.join(argv)}\n{done.stderr[-2000:]}")
    return TlsFiles(ca, cert, key)


def redis_tls_ping(
    port: int, ca: Path, host: str = "127.0.0.1", timeout: float = 1.0
) -> Callable[[], bool]:
    """A readiness check for a TLS-only redis-server (PING over TLS, CA-verified)."""
    import ssl

    context = ssl.create_default_context(cafile=str(ca))

    def check() -> bool:
        try:
            with socket.create_connection((host, port), timeout=timeout) as raw, \
                    context.wrap_socket(raw, server_hostname=host) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                reply = s.recv(64)
        except (OSError, ssl.SSLError):
            return False
        return reply.startswith((b"+PONG", b"-NOAUTH"))

    return check


def free_cluster_port(host: str = "127.0.0.1") -> int:
    """A free port whose cluster bus port (port + 10000) is free and valid too."""
    for _ in range(200):
        port = free_port(host)
        if port + 10000 > 65535:
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((host, port + 10000))
        except OSError:
            continue
        return port
    raise ServerStartError("no free port pair (port, port + 10000) for a Redis Cluster node")


class RedisCluster:
    """A local Redis Cluster of real `redis-server --cluster-enabled yes` processes.

    `url` is the reverie URL (redis+cluster://127.0.0.1:PORT); `ports` lists every master.
    `stop()` stops every node. Usable as a context manager.
    """

    def __init__(self, nodes: list[ServerProcess], ports: list[int]) -> None:
        self.nodes = nodes
        self.ports = ports
        self.url = f"redis+cluster://127.0.0.1:{ports[0]}"

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cluster_info(port: int) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n")
            return s.recv(4096).decode("utf-8", "replace")
    except OSError:
        return ""


def start_redis_cluster(
    path: str | Path, *, masters: int = 3, timeout: float = 60.0
) -> RedisCluster:
    """Start `masters` cluster-enabled nodes on free ports, join them with
    `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`, and wait until
    every node reports cluster_state:ok. Fails loudly (with the logs), never skips;
    on failure every node started so far is stopped."""
    cli = shutil.which("redis-cli")
    if not cli:
        raise ServerStartError("redis-cli is not on PATH; install redis-tools / redis-server")
    base = Path(path)
    nodes: list[ServerProcess] = []
    ports: list[int] = []
    try:
        for i in range(masters):
            port = free_cluster_port()
            node_dir = base / f"node-{i}"
            server, _ = start_redis(
                node_dir,
                port=port,
                extra_args=[
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", str(node_dir / "nodes.conf"),
                    "--cluster-node-timeout", "5000",
                ],
                timeout=timeout,
            )
            nodes.append(server)
            ports.append(port)
        create = subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if create.returncode != 0:
            raise ServerStartError(
                f"redis-cli --cluster create failed ({create.returncode}):\n"
                f"{create.stdout[-2000:]}\n{create.stderr[-2000:]}"
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in _cluster_info(p) for p in ports):
                return RedisCluster(nodes, ports)
            time.sleep(0.2)
        raise ServerStartError(
            f"Redis Cluster on ports {ports} did not reach cluster_state:ok in {timeout:.0f} s"
            f":\n{_cluster_info(ports[0])}"
        )
    except BaseException:
        for node in nodes:
            node.stop()
        raise
