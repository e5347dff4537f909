"""Credentials never shown: Redis passwords and Chroma tokens are masked in every store
and index `repr`, in typed errors (with their causes), in log records and in what
`engine.stats()` reports, against a password-protected Redis and a token-checking proxy
in front of a real Chroma server."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reverie.core.errors import AuthFailed, BackendUnavailable, InvalidInput, ReverieError
from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.factory import ENV_CHROMA_TOKEN, open_engine, open_store, open_vectors
from reverie.integrations.redis.outbox import OutboxIndex
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.urls import redact
from tests.integration.chroma_token_proxy import TokenProxy
from tests.servers import ServerProcess, start_redis

PASSWORD = "pw-Zq81xLmn"
TOKEN = "tok-Hy62vBwe"
SECRETS = (PASSWORD, TOKEN)


def shown(*texts: object) -> str:
    return "\n".join(str(t) for t in texts)


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a credential is shown in: {text!r}"


def error_text(e: BaseException) -> str:
    """All a user could see of an error: its message, its causes, the traceback."""
    return "".join(traceback.format_exception(e))


@pytest.fixture(scope="module")
def redis_pw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, int]]:
    server, url = start_redis(tmp_path_factory.mktemp("redis-pw") / "data", password=PASSWORD)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        yield server, port
    finally:
        server.stop()


@pytest.fixture(scope="module")
def proxy(chroma_server_url: str) -> Iterator[TokenProxy]:
    p = TokenProxy(chroma_server_url, TOKEN)
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


# --- the one redaction function -------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://:pw-1@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://alice:pw-1@h:6379/0", "redis://alice:***@h:6379/0"),
        ("rediss://alice:p@ss@h:6379/0", "rediss://alice:***@h:6379/0"),
        ("redis+cluster://:pw-1@h:7000", "redis+cluster://:***@h:7000"),
        ("redis://h:6379/0?password=pw-1&db=2", "redis://h:6379/0?password=***&db=2"),
        ("http://:tok-1@h:8000", "http://:***@h:8000"),
        ("http://h:8000?token=tok-1", "http://h:8000?token=***"),
        ("redis://alice@h:6379/0", "redis://alice@h:6379/0"),
        ("/var/lib/reverie/memory.db", "/var/lib/reverie/memory.db"),
        ("failed at redis://:pw-1@h:1/0: boom", "failed at redis://:***@h:1/0: boom"),
    ],
)
def test_redact(url: str, masked: str) -> None:
    assert redact(url) == masked


def test_redact_masks_known_secrets_anywhere() -> None:
    assert redact("header Bearer tok-1 sent", ("tok-1",)) == "header Bearer *** sent"
    assert redact("nothing", (None, "")) == "nothing"


# --- Redis ------------------------------------------------------------------------------


def test_redis_store_repr_masks_the_password(redis_pw: tuple[ServerProcess, int]) -> None:
    _, port = redis_pw
    for url in (
        f"redis://:{PASSWORD}@127.0.0.1:{port}/0",
        f"redis://default:{PASSWORD}@127.0.0.1:{port}/0",
        f"redis://127.0.0.1:{port}/0?password={PASSWORD}",
    ):
        store = open_store(url, Path("unused"))
        try:
            assert isinstance(store, RedisStore)
            assert_clean(repr(store))
            assert "***" in repr(store)
        finally:
            store.close()


def test_redis_errors_mask_the_password(
    redis_pw: tuple[ServerProcess, int], caplog: pytest.LogCaptureFixture
) -> None:
    server, port = redis_pw
    caplog.set_level(logging.DEBUG)
    # wrong password given as a query parameter: the URL in the message is masked
    with pytest.raises(AuthFailed) as wrong:
        open_store(f"redis://127.0.0.1:{port}/0?password=x{PASSWORD}", Path("unused"))
    assert_clean(error_text(wrong.value))
    # a server that goes away under an open store
    store = open_store(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", Path("unused"))
    try:
        assert isinstance(store, RedisStore)
        server.stop()
        with pytest.raises(BackendUnavailable) as down:
            store.namespaces()
        assert_clean(error_text(down.value))
        assert "***" in str(down.value)
    finally:
        store.close()
        server.start()
    with pytest.raises(InvalidInput) as bad:
        open_store(f"ftp://:{PASSWORD}@h/x", Path("unused"))
    assert_clean(error_text(bad.value))
    assert_clean(shown(*(r.getMessage() for r in caplog.records)))


def test_engine_on_password_redis_shows_no_password(
    redis_pw: tuple[ServerProcess, int],
    tmp_path: Path,
    embedder: LocalEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, port = redis_pw
    caplog.set_level(logging.DEBUG)
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0?password={PASSWORD}"
    with open_engine(tmp_path, store=url, embedder=embedder, namespace="cred") as engine:
        engine.observe("the deploy key lives in the vault")
        assert engine.recall("where is the deploy key")
        assert_clean(shown(engine.stats(), engine.namespaces(), repr(engine)))
        engine.forget_namespace("cred")
    assert_clean(shown(*(r.getMessage() for r in caplog.records)))


# --- Chroma behind a token ------------------------------------------------------------------


def _items(n: int = 3) -> list[VectorItem]:
    rng = np.random.default_rng(7)
    return [
        VectorItem(id=f"v{i}", vector=rng.standard_normal(8).astype(np.float32), metadata={})
        for i in range(n)
    ]


def test_token_in_the_url_reaches_the_server(proxy: TokenProxy) -> None:
    host = proxy.url.removeprefix("http://")
    index = ChromaIndex.server(f"http://:{TOKEN}@{host}")
    try:
        index.upsert("tok-url", _items())
        assert index.count("tok-url") == 3
        hits = index.query("tok-url", _items()[0].vector, 2)
        assert hits[0].id == "v0"
        assert_clean(repr(index))
        assert "***" in repr(index)
        index.drop_namespace("tok-url")
    finally:
        index.close()


def test_token_argument_and_environment(
    proxy: TokenProxy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    index = open_vectors(proxy.url, tmp_path, TOKEN)
    try:
        index.upsert("tok-arg", _items())
        assert index.count("tok-arg") == 3
        index.drop_namespace("tok-arg")
    finally:
        index.close()
    monkeypatch.setenv(ENV_CHROMA_TOKEN, TOKEN)
    index = open_vectors(proxy.url, tmp_path)
    try:
        index.upsert("tok-env", _items())
        assert index.count("tok-env") == 3
        assert_clean(repr(index))
        index.drop_namespace("tok-env")
    finally:
        index.close()


@pytest.mark.parametrize("given", [None, "x" + TOKEN])
def test_missing_or_wrong_token_is_auth_failed(
    proxy: TokenProxy, given: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_CHROMA_TOKEN, raising=False)
    with pytest.raises(AuthFailed) as refused:
        open_vectors(proxy.url, tmp_path, given)
    text = error_text(refused.value)
    assert_clean(text)
    if given:
        assert given not in text
    assert "REVERIE_CHROMA_TOKEN" in str(refused.value)
    assert "server is up" not in str(refused.value)


def test_engine_with_vectors_token(
    proxy: TokenProxy,
    redis_pw: tuple[ServerProcess, int],
    tmp_path: Path,
    embedder: LocalEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The shared tier: Redis with a password, a Chroma server behind a token, both given
    as open_engine would get them from a user."""
    _, port = redis_pw
    caplog.set_level(logging.DEBUG)
    with open_engine(
        tmp_path,
        store=f"redis://:{PASSWORD}@127.0.0.1:{port}/0",
        vectors=proxy.url,
        vectors_token=TOKEN,
        embedder=embedder,
        namespace="cred-shared",
    ) as engine:
        engine.observe("the staging database password rotates monthly")
        assert engine.recall("when does the staging password rotate")
        stats = engine.stats()
        assert stats["vectors"] + stats.get("vectors_queued", 0) >= 1
        assert_clean(shown(stats, repr(engine)))
        engine.forget_namespace("cred-shared")
    assert_clean(shown(*(r.getMessage() for r in caplog.records)))
    # the wrapped objects, as the shared tier builds them
    store = open_store(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", tmp_path)
    index = open_vectors(proxy.url, tmp_path, TOKEN)
    try:
        assert isinstance(store, RedisStore)
        outbox = OutboxIndex(index, store.client, prefix=store.prefix)
        assert_clean(shown(repr(store), repr(index), repr(outbox)))
    finally:
        index.close()
        store.close()


def test_every_typed_error_here_is_a_reverie_error() -> None:
    assert issubclass(AuthFailed, ReverieError)


def test_unknown_vector_url_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as bad:
        open_vectors(f"ftp://:{TOKEN}@host/x", tmp_path)
    assert_clean(error_text(bad.value))
    assert not (tmp_path / "ftp:").exists()


def test_store_named_by_the_caller_is_masked(redis_pw: tuple[ServerProcess, int]) -> None:
    import redis as redis_py

    _, port = redis_pw
    client = redis_py.Redis(port=port, password=PASSWORD, decode_responses=True)
    store = RedisStore(client, name=f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    try:
        assert_clean(repr(store))
    finally:
        store.close()


def test_cli_stats_shows_no_password_or_token(
    proxy: TokenProxy, redis_pw: tuple[ServerProcess, int], tmp_path: Path
) -> None:
    """`reverie stats`, table and JSON, with the password in --store and the token given
    by --vectors-token: the locations are shown, the credentials are not."""
    from typer.testing import CliRunner

    from reverie.adapters.cli.app import app

    _, port = redis_pw
    args = [
        "--home", str(tmp_path), "--store", f"redis://:{PASSWORD}@127.0.0.1:{port}/0",
        "--vectors", proxy.url, "--vectors-token", TOKEN, "-n", "cred-cli", "stats",
    ]
    runner = CliRunner()
    for extra in ([], ["--json"]):
        result = runner.invoke(app, args + extra, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert f"127.0.0.1:{port}" in result.output
        assert_clean(result.output)
