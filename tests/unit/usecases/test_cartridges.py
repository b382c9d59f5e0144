"""usecases.cartridges on fakes: what an export signs and stores, what it refuses, and downloads.

The cartridge is really built and signed (``acx.core.export`` with a local Ed25519 key); the fakes
stand in for the log, the jobs table, the bucket and the export queue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acx.core.cartridge.reader import CartridgeReader
from acx.core.package import PackageRef
from acx.usecases import cartridges
from acx.usecases.errors import ServiceError
from tests.factories import FIELD_REPO, memory, tier_fields
from tests.fakes import FakeIndex, FakeQueue, chained_deps, ingest_records

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps():
    d = chained_deps(DOWNLOAD_URL_TTL=90)
    d.index_hooks = FakeIndex()
    d.queue = FakeQueue()
    records = [
        memory("rom-1", title="Portable lesson"),
        memory("save-1", title="Local lesson", **tier_fields(False)),
    ]
    ingest_records(d, REF, *records)
    return d


def exports(deps) -> list[dict]:
    return deps.jobs.list("t1", "notes", "export")


def test_a_small_export_is_signed_stored_and_names_the_id_it_signed(deps, tmp_path: Path) -> None:
    status, out = cartridges.request_export(deps, "t1", "notes", "t1/agent")
    assert status == 201 and out["status"] == "ready" and out["keyid"]
    key = cartridges.cartridge_key("t1", "notes", out["cartridgeId"])
    assert list(deps.cartridges.objects) == [key] and "key" not in out and "actor" not in out
    path = tmp_path / "c.acx"
    path.write_bytes(deps.cartridges.objects[key])
    with CartridgeReader(path) as reader:
        assert reader.meta()["acx.cartridge_id"] == out["cartridgeId"]
    # field-learned records stay home unless asked for
    assert out["quarantined"] == 1 and out["fieldLearned"].startswith("quarantined (1")
    assert out["bytes"] == len(deps.cartridges.objects[key])


def test_field_learned_records_are_exported_only_when_asked(deps) -> None:
    _, out = cartridges.request_export(deps, "t1", "notes", "a", include_field_learned=True)
    assert out["quarantined"] == 0 and out["fieldLearned"] == "included"


def test_a_repo_id_in_portable_text_blocks_the_export_and_nothing_is_stored(deps) -> None:
    leak = memory("rom-2", title="Mentions the repo", summary=f"see {FIELD_REPO} for the fix")
    ingest_records(deps, REF, leak)
    with pytest.raises(ServiceError) as info:
        cartridges.request_export(deps, "t1", "notes", "a")
    assert (info.value.status, info.value.code) == (422, "blocked")
    assert FIELD_REPO not in json.dumps(info.value.body())  # the report names where, never what
    assert deps.cartridges.objects == {} and [j["status"] for j in exports(deps)] == ["blocked"]


def test_a_large_or_forced_export_is_queued_not_built(deps) -> None:
    status, out = cartridges.request_export(deps, "t1", "notes", "a", force_async=True)
    assert (status, out["status"]) == (202, "pending")
    assert deps.queue.sent == [{"tenant": "t1", "package": "notes", "cartridgeId": out["cartridgeId"]}]
    assert deps.cartridges.objects == {}


def test_without_a_queue_an_async_export_is_503_and_leaves_no_pending_job(deps) -> None:
    deps.queue = FakeQueue(url=None)
    with pytest.raises(ServiceError) as info:
        cartridges.request_export(deps, "t1", "notes", "a", force_async=True)
    assert (info.value.status, info.value.headers) == (503, {"Retry-After": "5"})
    assert exports(deps) == []  # no job that no worker will ever run


def test_an_unknown_or_locked_package_exports_nothing(deps) -> None:
    with pytest.raises(ServiceError) as info:
        cartridges.request_export(deps, "t1", "other", "a")
    assert info.value.status == 404
    deps.log.locks[REF] = True
    with pytest.raises(ServiceError) as info:
        cartridges.request_export(deps, "t1", "notes", "a")
    assert info.value.status == 423 and exports(deps) == [] and deps.cartridges.objects == {}


def test_a_redelivered_export_message_builds_nothing_twice(deps) -> None:
    _, out = cartridges.request_export(deps, "t1", "notes", "a")
    uploads = sum(len(v) for v in deps.cartridges.history.values())
    again = cartridges.run_export(deps, "t1", "notes", out["cartridgeId"])
    assert again == out and sum(len(v) for v in deps.cartridges.history.values()) == uploads


def test_a_cartridge_revoked_while_it_was_built_does_not_outlive_the_revocation(deps, monkeypatch) -> None:
    upload = deps.cartridges.upload_file

    def upload_then_forget(key: str, path: str, content_type: str) -> None:
        upload(key, path, content_type)
        [job] = exports(deps)  # a forget revokes the job while the object lands
        deps.jobs.finish("t1", "notes", "export", job["jobId"], "revoked", expect=None)

    monkeypatch.setattr(deps.cartridges, "upload_file", upload_then_forget)
    _, out = cartridges.request_export(deps, "t1", "notes", "a")
    assert out["status"] == "revoked" and deps.cartridges.objects == {} and deps.cartridges.history == {}


def test_downloads_are_presigned_for_ready_cartridges_only(deps) -> None:
    _, out = cartridges.request_export(deps, "t1", "notes", "a")
    got = cartridges.download(deps, "t1", "notes", out["cartridgeId"])
    assert got["expiresIn"] == 90 and got["url"].startswith("https://cartridges.example/cartridges/t1/notes/")
    deps.jobs.finish("t1", "notes", "export", out["cartridgeId"], "revoked", expect=None)
    with pytest.raises(ServiceError) as info:
        cartridges.download(deps, "t1", "notes", out["cartridgeId"])
    assert info.value.status == 410
    with pytest.raises(ServiceError) as info:
        cartridges.download(deps, "t1", "notes", "0" * 32)
    assert info.value.status == 404


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("skills/a/SKILL.md", "rom/skills/a/SKILL.md"),
        ("knowledge/x.md", "rom/knowledge/x.md"),
        ("y.md", "rom/knowledge/y.md"),
    ],
)
def test_package_files_land_in_the_rom_zone(path, where) -> None:
    assert cartridges.cartridge_path(path) == where
