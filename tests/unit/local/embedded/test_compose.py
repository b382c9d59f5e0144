"""Composing a data directory: all state files or none, every port filled, nothing deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from acx.config import Settings
from acx.local.embedded.compose import (
    INGEST_QUEUE,
    STATE_FILES,
    DataDirDamaged,
    embedded_deps,
    open_backend,
)


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_first_start_creates_every_state_file_private_and_fills_every_port(tmp_path: Path) -> None:
    backend = open_backend(tmp_path, Settings())
    try:
        assert not backend.restarted
        assert all((tmp_path / n).stat().st_mode & 0o077 == 0 for n in STATE_FILES)
        d = backend.deps
        for port in ("queue", "alarm_topic", "idempotency_store", "catalog_reader", "index_store"):
            assert getattr(d, port) is not None, port
        assert d.export_queue().configured and d.alarms().configured
        assert d.search_index() is d.index_store
    finally:
        backend.close()
    again = open_backend(tmp_path, Settings())
    assert again.restarted  # the control: complete, it opens as a restart
    again.close()


def test_an_upload_put_queues_the_s3_event_only_under_the_uploads_prefix(tmp_path: Path) -> None:
    import json
    from urllib.parse import unquote_plus

    backend = open_backend(tmp_path, Settings())
    try:
        uploads = backend.deps.settings.uploads_bucket
        backend.put_object(uploads, "uploads/t/p/a b.json", iter([b"{}"]))
        backend.put_object(uploads, "elsewhere/x", iter([b"{}"]))
        backend.put_object(backend.deps.settings.data_bucket, "uploads/t/p/c.json", iter([b"{}"]))
        (body,) = backend.queues.bodies(INGEST_QUEUE)
        record = json.loads(body)["Records"][0]
        assert record["eventName"].startswith("ObjectCreated")
        assert record["s3"]["bucket"]["name"] == uploads and record["s3"]["object"]["size"] == 2
        assert unquote_plus(record["s3"]["object"]["key"]) == "uploads/t/p/a b.json"
    finally:
        backend.close()


@pytest.mark.parametrize("missing", [*STATE_FILES, "objects"])
def test_a_partial_data_directory_is_refused_and_left_as_it_is(tmp_path: Path, missing: str) -> None:
    open_backend(tmp_path, Settings()).close()
    target = tmp_path / missing
    if target.is_dir():
        import shutil

        shutil.rmtree(target)
    else:
        target.unlink()
    before = _files(tmp_path)
    with pytest.raises(DataDirDamaged, match=missing):
        embedded_deps(tmp_path, Settings())
    assert _files(tmp_path) == before and not (tmp_path / missing).exists()
