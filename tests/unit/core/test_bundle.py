"""Upload bundle parsing: every limit is enforced with its JSON path and status; packing a package dir."""

from __future__ import annotations

import json

import pytest
import rfc8785

from acx.core.bundle import SCHEMA_VERSION, BundleError, Limits, parse_bundle, write_schema
from acx.core.fingerprint import canonical_repo_identity, codebase_fingerprint
from acx.core.packing import pack_directory
from tests.factories import memory

SALT = bytes(range(32))


def record(i: int = 0, **changes) -> dict:
    return memory(f"mem-{i}", **{"xpAwarded": 2.5} | changes)


def bundle(**changes) -> dict:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "records": [record(0), record(1)],
        "knowledge": [],
        "skills": [],
    } | changes


def refused(doc, limits: Limits = Limits()) -> BundleError:  # noqa: B008
    with pytest.raises(BundleError) as info:
        parse_bundle(doc, limits)
    return info.value


def test_valid_bundle_parses_and_canonical_bytes_match_rfc8785(load_vector):
    records = load_vector("merge.json")["existing"]
    doc = bundle(
        records=records,
        knowledge=[{"path": "knowledge/CAREER.md", "content": "# é\n"}, {"path": "STYLE.md", "content": ""}],
        skills=[{"path": "skills/review/SKILL.md", "content": "---\nname: review\n---\n"}],
    )
    parsed = parse_bundle(json.dumps(doc).encode())
    assert parsed.records == records
    assert parsed.knowledge == [("knowledge/CAREER.md", "# é\n"), ("STYLE.md", "")]
    assert parsed.canonical_bytes() == rfc8785.dumps(doc)


def test_duplicate_record_ids_are_allowed():
    assert len(parse_bundle(bundle(records=[record(0), record(0)])).records) == 2


def test_body_size_limit_is_413():
    err = refused(json.dumps(bundle()).encode(), Limits(max_body_bytes=100))
    assert (err.status, err.code, err.path) == (413, "body_too_large", "$")
    assert "100" in err.message


def test_record_count_limit_is_413():
    err = refused(bundle(records=[record(i) for i in range(4)]), Limits(max_records=3))
    assert (err.status, err.path) == (413, "$.records") and "3" in err.message


def test_invalid_record_names_its_path_and_the_standard_message():
    err = refused(bundle(records=[record(0), record(1, codebaseFingerprint="cbf1_" + "a" * 40)]))
    assert err.status == 422
    assert err.path == "$.records[1].codebaseFingerprint"
    assert err.message == "portable=true requires codebaseFingerprint=null"


@pytest.mark.parametrize(
    ("changes", "path", "limit"),
    [
        ({"title": "x" * 513}, "$.records[0].title", "512"),
        ({"summary": "x" * 16385}, "$.records[0].summary", "16384"),
        ({"sourceType": "x" * 1025}, "$.records[0].sourceType", "1024"),
        ({"tags": ["t"] * 65}, "$.records[0].tags", "64"),
        ({"tags": ["ok", "t" * 129]}, "$.records[0].tags[1]", "128"),
    ],
)
def test_per_field_limits_name_path_and_limit(changes, path, limit):
    err = refused(bundle(records=[record(0, **changes)]))
    assert err.path == path and limit in err.message and err.status == 422


def test_unknown_top_level_field_is_refused():
    err = refused(bundle(extra=1))
    assert (err.code, err.path) == ("unknown_field", "$.extra")


def test_wrong_schema_version_is_refused():
    assert refused(bundle(schemaVersion="acx.memory-bundle/2")).path == "$.schemaVersion"


def test_nesting_depth_limit():
    deep: object = "x"
    for _ in range(20):
        deep = [deep]
    err = refused(bundle(vectors=deep))
    assert err.code == "too_deep" and "16" in err.message and err.path.startswith("$.vectors")


@pytest.mark.parametrize(
    ("section", "path"),
    [
        ("knowledge", "../etc/passwd.md"),
        ("knowledge", "/abs.md"),
        ("knowledge", "knowledge\\x.md"),
        ("knowledge", "a\x00.md"),
        ("knowledge", "knowledge/.hidden.md"),
        ("knowledge", "other/x.md"),
        ("knowledge", "x.txt"),
        ("skills", "skills/a/README.md"),
        ("skills", "skills/../SKILL.md"),
        ("skills", "skills/a/b/SKILL.md"),
    ],
)
def test_unsafe_or_misplaced_file_paths_are_refused(section, path):
    err = refused(bundle(**{section: [{"path": path, "content": "x"}]}))
    assert err.path == f"$.{section}[0].path" and err.code == "invalid_path"


def test_total_file_bytes_limit_is_413():
    files = [{"path": f"k{i}.md", "content": "é" * 30} for i in range(2)]
    err = refused(bundle(knowledge=files), Limits(max_files_bytes=100))
    assert (err.status, err.path) == (413, "$.knowledge[1].content")


def test_invalid_json_is_422_with_path():
    err = refused(b'{"schemaVersion":"acx.memory-bundle/1","records":[{"id":"a","id":"b"}]}')
    assert (err.code, err.status, err.path) == ("invalid_json", 422, "$.records[0].id")


def test_vectors_must_match_the_engine_dimension():
    good = {"engine": {"id": "local-hash-128", "dim": 2}, "items": [{"id": "mem-0", "vector": [0.6, 0.8]}]}
    assert parse_bundle(bundle(vectors=good)).vectors == good
    bad = good | {"items": [{"id": "mem-0", "vector": [1.0]}]}
    assert refused(bundle(vectors=bad)).path == "$.vectors.items[0].vector"


def test_written_schema_is_valid_and_accepts_a_bundle(tmp_path):
    import jsonschema

    schema = json.loads(write_schema(tmp_path / "s.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(bundle(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bundle(records=[record(0, portable="true")]), schema)


def test_committed_schema_is_up_to_date(tmp_path):
    from pathlib import Path

    import acx.core.bundle as module

    committed = Path(module.__file__).resolve().parent.parent / "schemas" / "bundle.schema.json"
    assert committed.read_text() == write_schema(tmp_path / "s.json").read_text()


def _package(tmp_path, records):
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "memory-records.json").write_text(json.dumps(records))
    (tmp_path / "IDENTITY.md").write_text("# me")
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "STYLE.md").write_text("style")
    (tmp_path / "skills" / "review").mkdir(parents=True)
    (tmp_path / "skills" / "review" / "SKILL.md").write_text("---\nname: review\n---\n")
    return tmp_path


def _untiered(i, repo):
    out = record(i, repoId=repo)
    del out["portable"], out["codebaseFingerprint"]
    return out


def test_pack_directory_derives_tiers_and_fingerprints(tmp_path):
    pkg = _package(tmp_path, [_untiered(0, None), _untiered(1, ""), _untiered(2, "acme/api")])
    doc = pack_directory(pkg, SALT)
    first, second, third = doc["records"]
    assert first["portable"] is True and first["codebaseFingerprint"] is None
    assert second["portable"] is True and second["repoId"] is None
    assert third["portable"] is False
    assert third["codebaseFingerprint"] == codebase_fingerprint(
        SALT, canonical_repo_identity("repo://acme/api")
    )
    assert [k["path"] for k in doc["knowledge"]] == ["IDENTITY.md", "knowledge/STYLE.md"]
    assert [s["path"] for s in doc["skills"]] == ["skills/review/SKILL.md"]
    parse_bundle(doc)


def test_pack_directory_needs_a_salt_for_field_learned_records(tmp_path):
    pkg = _package(tmp_path, [_untiered(0, "acme/api")])
    with pytest.raises(BundleError) as info:
        pack_directory(pkg, None)
    assert info.value.code == "salt_required" and "acme" not in str(info.value)
