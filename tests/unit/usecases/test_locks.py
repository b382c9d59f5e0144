"""usecases.locks on fakes: who may lock, what the entry holds, and what a lock refuses."""

from __future__ import annotations

import pytest

from acx.core.canonical import sha256_hex
from acx.core.package import PackageRef
from acx.usecases import locks
from acx.usecases.errors import ServiceError
from tests.fakes import fake_deps

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps():
    d = fake_deps()
    d.log.create(REF, size=3)
    return d


def test_lock_appends_one_entry_whose_hash_hides_the_reason(deps) -> None:
    out = locks.set_lock(deps, "t1", "notes", "ops", True, "incident 4711: leaked key")
    assert out["changed"] and out["locked"] and out["log"] == {"fromSeq": 3, "toSeq": 3}
    [(ref, actor, locked, content_hash)] = deps.log.lock_entries
    assert (ref, actor, locked) == (REF, "ops", True)
    assert content_hash == sha256_hex({"locked": True, "reason": "incident 4711: leaked key"})
    assert "incident" not in str(out)  # the reason is hashed, never echoed


def test_locking_twice_is_idempotent_and_writes_nothing(deps) -> None:
    locks.set_lock(deps, "t1", "notes", "ops", True)
    again = locks.set_lock(deps, "t1", "notes", "ops", True)
    assert not again["changed"] and again["log"] == {"fromSeq": None, "toSeq": None}
    assert len(deps.log.lock_entries) == 1


def test_a_locked_package_refuses_writes_with_423_and_rejects_the_pending_job(deps) -> None:
    locks.require_unlocked(deps, "t1", "notes")  # unlocked: passes
    locks.set_lock(deps, "t1", "notes", "ops", True)
    deps.jobs.create("t1", "notes", "upload", "u1")
    with pytest.raises(ServiceError) as info:
        locks.require_unlocked(deps, "t1", "notes", job=("upload", "u1"))
    assert (info.value.status, info.value.code) == (423, "locked")
    job = deps.jobs.get("t1", "notes", "upload", "u1")
    assert job["status"] == "rejected" and job["error"]["code"] == "locked"
    locks.set_lock(deps, "t1", "notes", "ops", False)
    locks.require_unlocked(deps, "t1", "notes")


def test_lock_of_an_unknown_package_is_404_and_writes_nothing(deps) -> None:
    with pytest.raises(ServiceError) as info:
        locks.set_lock(deps, "t1", "other", "ops", True)
    assert info.value.status == 404 and deps.log.lock_entries == []


@pytest.mark.parametrize(
    ("reason", "code"), [(5, "invalid_type"), ("x" * (locks.MAX_REASON_CHARS + 1), "too_long")]
)
def test_a_bad_reason_is_422_naming_the_field(deps, reason, code) -> None:
    with pytest.raises(ServiceError) as info:
        locks.set_lock(deps, "t1", "notes", "ops", True, reason)
    assert (info.value.status, info.value.code, info.value.path) == (422, code, "$.reason")
    assert deps.log.lock_entries == []
    assert locks.check_reason("x" * locks.MAX_REASON_CHARS) == "x" * locks.MAX_REASON_CHARS
