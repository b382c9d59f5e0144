"""Fixtures shared by the use-case tests."""

from __future__ import annotations

import pytest

from acx.usecases import search


@pytest.fixture
def fake_search_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold process cache of search views for each test (the fake index store itself comes with
    ``tests.fakes.fake_deps``, through ``Deps.index_store``)."""
    monkeypatch.setattr(search, "CACHE", search.IndexCache())
