"""usecases.recall on fakes: paging, filters, forgotten rows, the banner and its input checks."""

from __future__ import annotations

import pytest

from acx.core.package import PackageRef
from acx.usecases import recall
from acx.usecases.errors import ServiceError
from tests.factories import memory, tier_fields
from tests.fakes import fake_deps

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps():
    d = fake_deps()
    d.log.create(REF)
    for i in range(7):
        d.log.rows.put(REF, memory(f"m-{i}", tags=["ops"] if i % 2 else [], **tier_fields(i != 3)))
    d.log.rows.put(REF, memory("m-gone"), active=False)
    return d


def test_pages_follow_the_cursor_to_every_active_record_once(deps) -> None:
    seen, cursor = [], None
    while True:
        page = recall.recall(deps, "t1", "notes", limit=3, cursor=cursor)
        assert page["advisory"] == recall.ADVISORY and not page["corrupt"]
        seen += [r["id"] for r in page["records"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == [f"m-{i}" for i in range(7)]  # id order, the forgotten row never


def test_tier_and_tag_filter(deps) -> None:
    assert [r["id"] for r in recall.recall(deps, "t1", "notes", tier="save")["records"]] == ["m-3"]
    ops = recall.recall(deps, "t1", "notes", tag="ops", tier="rom")["records"]
    assert [r["id"] for r in ops] == ["m-1", "m-5"]


def test_a_page_stops_early_once_it_passes_the_byte_budget(deps, monkeypatch) -> None:
    monkeypatch.setattr(recall, "PAGE_BYTES", 1)
    monkeypatch.setattr(recall, "READ_CHUNK", 2)
    page = recall.recall(deps, "t1", "notes", limit=100)
    # stops after the record that passes the budget, inside the chunk; the next page starts after it
    assert len(page["records"]) == 1 and page["nextCursor"] is not None
    after = recall.recall(deps, "t1", "notes", limit=100, cursor=page["nextCursor"])
    assert after["records"][0]["id"] > page["records"][0]["id"]


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"tier": "field"}, "$.tier"),
        ({"limit": 0}, "$.limit"),
        ({"limit": recall.MAX_LIMIT + 1}, "$.limit"),
        ({"cursor": "bm90LWEtcm93"}, "$.cursor"),  # base64 of "not-a-row"
    ],
)
def test_bad_input_is_400_naming_the_parameter(deps, kwargs, path) -> None:
    with pytest.raises(ServiceError) as info:
        recall.recall(deps, "t1", "notes", **kwargs)
    assert info.value.status == 400 and info.value.path == path


def test_get_memory_answers_one_active_record_and_404_for_forgotten_or_unknown(deps) -> None:
    one = recall.get_memory(deps, "t1", "notes", "m-3")
    assert one["record"]["id"] == "m-3" and one["zone"] == "save" and one["advisory"] == recall.ADVISORY
    for rid in ("m-gone", "m-404"):
        with pytest.raises(ServiceError) as info:
            recall.get_memory(deps, "t1", "notes", rid)
        assert info.value.status == 404
    with pytest.raises(ServiceError) as info:
        recall.get_memory(deps, "t1", "notes", "x" * 1000)
    assert (info.value.status, info.value.path) == (400, "$.id")


def test_an_unknown_package_is_404_not_an_empty_page(deps) -> None:
    with pytest.raises(ServiceError) as info:
        recall.recall(deps, "t1", "nope")
    assert info.value.status == 404


def test_the_answer_splices_each_records_stored_json_and_parses_to_the_same_values(deps) -> None:
    import json

    odd = memory("m-7", summary='日本 🚀 é "quoted" \\ \u2028 tab\t', xpAwarded=2.5, tags=["ünï"])
    deps.log.rows.put(REF, odd)
    page = recall.recall_page(deps, "t1", "notes", limit=100)
    body = page.to_json()
    assert json.loads(body) == page.to_dict() == recall.recall(deps, "t1", "notes", limit=100)
    keys = {"advisory", "corrupt", "records", "meta", "nextCursor"}  # RecallPage's keys
    assert set(json.loads(body)) == keys
    assert [r["id"] for r in json.loads(body)["records"]][-1] == "m-7"
    for row in page.records:
        assert row.canonical.decode() in body  # as stored, not serialised again
    more = recall.recall_page(deps, "t1", "notes", limit=2)
    assert json.loads(more.to_json())["nextCursor"] == more.next_cursor is not None


def test_a_record_whose_stored_json_does_not_parse_strictly_makes_the_page_corrupt() -> None:
    from acx.core.rows import ListedRecord

    dup = ListedRecord("m-1", b'{"id":"m-1","id":"m-2"}')  # well-formed JSON, refused by the strict parser
    page = recall.Page([dup], None)
    assert page.to_dict() == {
        "advisory": recall.ADVISORY,
        "corrupt": True,
        "records": [],
        "meta": [],
        "nextCursor": None,
    }


def test_non_ascii_records_count_three_times_their_bytes_against_the_page_budget(monkeypatch) -> None:
    """Lambda escapes non-ASCII in its JSON result (a 2-byte character may take 6 bytes of the 6 MB
    limit): the raw bytes a page splices in are weighed as their worst escaped size."""
    from acx.core.canonical import dumps_record

    d = fake_deps()
    d.log.create(REF)
    for i in range(6):
        d.log.rows.put(REF, memory(f"a-{i}", summary="plain " + "x" * 200))
        d.log.rows.put(REF, memory(f"b-{i}", summary="accent " + "é" * 100))
    plain = len(dumps_record(memory("a-0", summary="plain " + "x" * 200)))
    monkeypatch.setattr(recall, "PAGE_BYTES", 4 * plain)
    first = recall.recall_page(d, "t1", "notes", limit=100)
    assert [r.id for r in first.records] == ["a-0", "a-1", "a-2", "a-3"]  # ASCII: counted as sent
    accented = recall.recall_page(d, "t1", "notes", limit=100, cursor="ciNhLTU=")  # after r#a-5
    assert [r.id for r in accented.records] == ["b-0", "b-1"]  # 3 x ~300 bytes each: full after two
