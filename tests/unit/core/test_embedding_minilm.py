"""The offline semantic engine: pinned files, checked before use; real vectors when the extra is there."""

from __future__ import annotations

import importlib.util
import math

import pytest

from acx.core import embedding
from acx.core.embedding import (
    MINILM_DIR_ENV,
    MINILM_ID,
    LocalHash128,
    MiniLM,
    ModelUnavailable,
    engine_named,
    minilm_files,
)
from tests.conftest import needs_minilm


def test_engines_are_named_by_their_id_and_dimension() -> None:
    assert isinstance(engine_named("local-hash-128"), LocalHash128)
    minilm = engine_named(MINILM_ID)
    assert isinstance(minilm, MiniLM) and minilm.id == "minilm-l6-v2-int8-384" and minilm.dim == 384
    assert engine_named("minilm") is None
    assert not MiniLM.lexical and MiniLM.min_similarity == 0.15


def test_files_not_the_pinned_ones_are_refused_before_anything_runs(tmp_path: pytest.TempPathFactory) -> None:
    model, tokenizer = tmp_path / "model.onnx", tmp_path / "tokenizer.json"  # type: ignore[operator]
    model.write_bytes(b"not the model")
    tokenizer.write_text("{}")
    with pytest.raises(ModelUnavailable, match="not the pinned file"):
        MiniLM(str(model), str(tokenizer)).embed(["anything"])


def test_a_missing_file_is_named_without_a_traceback_of_io(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(ModelUnavailable, match="cannot read"):
        MiniLM(str(tmp_path / "none.onnx"), str(tmp_path / "none.json")).embed(["x"])  # type: ignore[operator]


def test_the_directory_of_the_environment_variable_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MINILM_DIR_ENV, "/models/minilm")
    assert minilm_files() == ("/models/minilm/model.onnx", "/models/minilm/tokenizer.json")


def test_without_the_packages_or_the_directory_the_engine_says_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MINILM_DIR_ENV, raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ModelUnavailable, match=r"semantic_model\.py"):
        minilm_files()


@needs_minilm
def test_paraphrases_are_close_and_unrelated_text_is_not() -> None:
    engine = MiniLM()
    q, answer, other = engine.embed(
        [
            "containers keep getting killed for using too much RAM",
            "Kubernetes pods evicted for memory: the JVM heap ignored the container limit",
            "The nightly report used local time, so daylight saving shifted every row",
        ]
    )
    assert len(q) == embedding.MINILM_DIM
    assert math.isclose(math.fsum(v * v for v in q), 1.0, rel_tol=1e-5)
    cos = [math.fsum(a * b for a, b in zip(q, v, strict=True)) for v in (answer, other)]
    assert cos[0] > 0.4 > cos[1]


@needs_minilm
def test_a_batch_gives_the_vectors_of_one_by_one() -> None:
    engine = MiniLM()
    texts = ["short", "a somewhat longer sentence about retries and backoff", ""]
    together = engine.embed(texts)
    alone = [engine.embed([t])[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
