"""The search response says why it is empty (issue 32), long queries are accepted, and the offline
semantic engine answers a question asked in other words end to end (when its extra is installed)."""

from __future__ import annotations

import pytest

from acx.contract.search import MAX_QUERY_CHARS
from acx.core.embedding import MINILM_ID
from acx.core.package import PackageRef
from acx.usecases import search
from acx.usecases.errors import ServiceError
from tests.conftest import needs_minilm
from tests.factories import memory
from tests.fakes import chained_deps, ingest_records

REF = PackageRef("t1", "notes")
NOTES = {
    "pool": ("Postgres connection pool exhausted under load", "pgbouncer in transaction mode fixed it"),
    "tz": ("Timezone bug in nightly report", "daylight saving shifted every row by an hour; store UTC"),
}


def _deps(**settings: object):  # type: ignore[no-untyped-def]
    d = chained_deps(**settings)
    ingest_records(d, REF, *(memory(rid, title=t, summary=s) for rid, (t, s) in NOTES.items()))
    search.CACHE.views.clear()
    return d


def test_a_query_with_nothing_relevant_answers_empty_with_reason_no_match(fake_search_index: object) -> None:
    out = search.search(_deps(), "t1", "notes", search.parse_query("sourdough bread recipe"))
    assert out.results == [] and out.reason == "no_match"
    assert out.model_dump()["reason"] == "no_match"  # in the JSON the API returns


def test_results_carry_no_reason(fake_search_index: object) -> None:
    out = search.search(_deps(), "t1", "notes", search.parse_query("connection pool"))
    assert [r.id for r in out.results] == ["pool"] and out.reason is None


def test_filters_that_leave_no_memory_answer_reason_no_memories(fake_search_index: object) -> None:
    out = search.search(_deps(), "t1", "notes", search.parse_query("connection pool", tier="save"))
    assert out.results == [] and out.reason == "no_memories"


def test_a_4096_character_query_is_accepted_and_a_longer_one_refused(fake_search_index: object) -> None:
    assert MAX_QUERY_CHARS == 4096
    long_q = ("why is the connection pool exhausted during the nightly report " * 70)[:MAX_QUERY_CHARS]
    out = search.search(_deps(), "t1", "notes", search.parse_query(long_q))
    assert out.results and out.results[0].id in {"pool", "tz"}
    with pytest.raises(ServiceError) as err:
        search.parse_query("x" * (MAX_QUERY_CHARS + 1))
    assert err.value.status == 400 and "4096" in err.value.message


@needs_minilm
def test_the_semantic_engine_finds_a_memory_that_shares_no_word_with_the_question(
    fake_search_index: object,
) -> None:
    d = _deps(SEARCH_ENGINE=MINILM_ID)
    out = search.search(d, "t1", "notes", search.parse_query("the DB refused sessions when visitors surged"))
    assert out.engine == MINILM_ID and out.results[0].id == "pool"
    assert out.results[0].signals.lexical is None and out.results[0].signals.vector is not None
