"""Fixtures shared by the use-case tests."""

from __future__ import annotations

import pytest

from acx.usecases import search
from tests.fakes import FakeIndexStore


@pytest.fixture
def fake_search_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Search indexes in each Deps' ``FakeObjects`` (one store per bucket), and a cold process cache.

    ``usecases.search`` builds its ``SearchIndexStore`` from ``deps.data`` itself instead of taking
    it from Deps, so this replaces its ``_store`` (the report of issue 15 names the one-line change).
    """
    stores: dict[int, FakeIndexStore] = {}
    monkeypatch.setattr(
        search, "_store", lambda deps: stores.setdefault(id(deps.data), FakeIndexStore(deps.data))
    )
    monkeypatch.setattr(search, "CACHE", search.IndexCache())
