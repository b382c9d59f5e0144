"""usecases.scheduled on fakes: every package verified, a report stored, operators alarmed on a break,
and the index compaction that runs after it never hides the report."""

from __future__ import annotations

import dataclasses
import json

import pytest

from acx.core.package import PackageRef
from acx.usecases import scheduled, search
from acx.usecases.errors import ServiceError
from tests.factories import memory
from tests.fakes import FakeAlarms, chained_deps, ingest_records

REF = PackageRef("t1", "notes")
OTHER = PackageRef("t2", "logs")


@pytest.fixture
def deps(fake_search_index):
    d = chained_deps()
    d.alarm_topic = FakeAlarms()
    for ref in (REF, OTHER):
        put(d, ref, memory("a", title=f"lesson of {ref.package}", summary="the secret plan"))
    return d


def put(deps, ref: PackageRef, *records: dict) -> None:
    ingest_records(deps, ref, *records)


def report(deps, out: dict) -> dict:
    return json.loads(deps.data.objects[out["reportKey"]])


def test_every_package_is_verified_and_the_report_stored_without_alarm(deps) -> None:
    out = scheduled.verify_everything(deps)
    assert out["failed"] == 0 and [p["status"] for p in out["packages"]] == ["ok", "ok"]
    assert out["reportKey"].startswith("reports/verify/") and report(deps, out)["packages"] == out["packages"]
    assert deps.alarm_topic.published == []
    assert all(p["incremental"] for p in out["packages"])  # against the witness the last run left


def test_a_broken_log_raises_an_alarm_naming_package_and_rule_not_content(deps) -> None:
    rows = deps.log.rows.of(OTHER)
    rows["a"] = dataclasses.replace(rows["a"], record={**rows["a"].record, "summary": "rewritten"})
    out = scheduled.verify_everything(deps)
    assert out["failed"] == 1
    [(subject, message)] = deps.alarm_topic.published
    assert subject == "acx: log verification failed" and message["report"] == out["reportKey"]
    assert message["failed"] == [
        {"tenant": "t2", "package": "logs", "status": "broken", "firstBadSeq": 0, "reason": "content-hash"}
    ]
    assert "secret plan" not in json.dumps(message) and "rewritten" not in json.dumps(message)


def test_without_an_alarm_topic_the_failure_is_still_in_the_report(deps) -> None:
    deps.alarm_topic = FakeAlarms(topic_arn=None)
    deps.log.checkpoints.by_size[REF].clear()
    out = scheduled.verify_everything(deps)
    assert report(deps, out)["failed"] == 1 and deps.alarm_topic.published == []


def test_indexes_past_the_threshold_are_compacted_after_verification(deps) -> None:
    for i in range(search.COMPACT_AT):
        put(deps, REF, memory(f"m-{i}", title=f"lesson {i}", summary=f"details {i} of {i}"))
    assert len(deps.search_index().manifest("t1", "notes").segments) == search.COMPACT_AT + 1
    out = scheduled.verify_everything(deps)
    assert out["indexesCompacted"] == 1 and len(deps.search_index().manifest("t1", "notes").segments) == 1


def test_a_compaction_failure_never_hides_the_report(deps, monkeypatch) -> None:
    def broken(_deps, _packages):
        raise ServiceError(503, "unavailable", "index store down")

    monkeypatch.setattr(scheduled, "compact_due", broken)
    out = scheduled.verify_everything(deps)
    assert out["indexesCompacted"] == 0 and report(deps, out)["failed"] == 0
