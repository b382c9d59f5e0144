"""The contract's models build their validators and serializers at first use (``defer_build``), so a
route pays only for the models it answers with; what they accept, refuse and send is unchanged."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from pydantic import BaseModel

from acx.contract import models
from acx.contract import search as search_models


def _models() -> list[type[BaseModel]]:
    return [
        m
        for _, m in inspect.getmembers(models, inspect.isclass)
        if issubclass(m, BaseModel)
        and m.__module__ in (models.__name__, search_models.__name__)
        # pydantic binds a generic it parametrises at module level (``RootModel[str]``) in that module;
        # it is the base of a declared model, never one a route answers with
        and "[" not in m.__name__
    ]


def test_every_contract_model_defers_its_build() -> None:
    assert len(_models()) > 30 and models.SearchResponse in _models()  # re-exported from .search
    assert [m.__name__ for m in _models() if not m.model_config.get("defer_build")] == []


def test_importing_the_contract_builds_no_validator() -> None:
    # pydantic's private MockValSer: it offers no public way to ask whether a validator is built yet.
    code = (
        "from acx.contract import models as m\n"
        "from pydantic._internal._mock_val_ser import MockValSer\n"
        "print(isinstance(m.SearchResponse.__pydantic_validator__, MockValSer),"
        " isinstance(m.UploadCreated.__pydantic_validator__, MockValSer))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_deferred_models_still_refuse_and_dump_as_before() -> None:
    with pytest.raises(models.RequestError):
        models.parse_request(models.UploadRequest, {"size": 1, "extra": True})
    with pytest.raises(models.RequestError):
        models.parse_request(models.LockRequest, {"reason": 7})  # strict: no coercion
    resp = models.SearchResponse(
        engine="local-hash-128",
        k=1,
        results=[
            models.SearchResult(
                id="m1",
                score=0.5,
                signals=models.Signals(lexical=models.LexicalSignal(rank=1, score=2.0, terms=["storm"])),
                record={"id": "m1"},
            )
        ],
    )
    dumped = resp.model_dump(mode="json")
    assert dumped["advisory"] and dumped["results"][0]["signals"] == {
        "lexical": {"rank": 1, "score": 2.0, "terms": ["storm"]},
        "vector": None,
    }
