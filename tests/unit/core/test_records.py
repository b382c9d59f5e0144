"""The memory record contract: tier rules with the standard's messages, strict types, no value echo."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core import records as records_mod
from acx.core.records import (
    MemoryRecord,
    RecordError,
    is_rfc3339,
    model_accepts,
    record_json_schema,
    validate_record,
    zone_of,
)
from tests.factories import CBF, memory

SECRET = "AKIAIOSFODNN7EXAMPLE secret value"


def rom() -> dict:
    return memory()


def save() -> dict:
    return rom() | {"id": "mem-2", "portable": False, "codebaseFingerprint": CBF, "repoId": "acme/api"}


def _error(record: dict, path: str = "$") -> RecordError:
    with pytest.raises(RecordError) as info:
        validate_record(record, path)
    return info.value


def test_valid_records_are_returned_unchanged_without_defaults():
    record = rom()
    before = copy.deepcopy(record)
    assert validate_record(record) is record
    assert record == before
    assert "zone" not in record and "artifactFingerprint" not in record


def test_every_artifact_vector_record_is_valid(load_vector):
    for case in load_vector("artifact-fingerprint.json")["cases"]:
        validate_record(case["record"])


def test_portable_true_requires_null_codebase_fingerprint():
    err = _error(rom() | {"codebaseFingerprint": CBF}, "$.records[3]")
    assert err.message == "portable=true requires codebaseFingerprint=null"
    assert err.path == "$.records[3].codebaseFingerprint"


def test_portable_true_requires_null_repo_id():
    err = _error(rom() | {"repoId": "acme/api"})
    assert err.message == "portable=true requires repoId=null"
    assert err.path == "$.repoId"


def test_portable_false_requires_a_codebase_fingerprint():
    for record in (
        save() | {"codebaseFingerprint": None},
        {k: v for k, v in save().items() if k != "codebaseFingerprint"},
    ):
        assert _error(record).message == "portable=false requires a codebaseFingerprint"


def test_field_learned_record_with_fingerprint_is_save_zone():
    record = validate_record(save())
    assert zone_of(record) == "save"
    assert zone_of(rom()) == "rom"


@pytest.mark.parametrize("value", ["true", 1, 0, None, "false", [True]])
def test_portable_must_be_a_real_boolean(value):
    err = _error(rom() | {"portable": value}, "$.records[3]")
    assert err.path == "$.records[3].portable"
    assert "boolean" in err.message


def test_missing_portable_is_rejected():
    record = rom()
    del record["portable"]
    err = _error(record)
    assert err.path == "$.portable" and "required" in err.message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("codebaseFingerprint", "cbf1_" + "AB" * 20),
        ("codebaseFingerprint", "cbf1_" + "ab" * 19),
        ("timestamp", "2026-02-30T00:00:00Z"),
        ("timestamp", "2026-01-02 03:04:05Z"),
        ("timestamp", "2026-01-02T03:04:05"),
        ("timestamp", "2026-01-02T03:04:05Z\n"),
        ("impact", "bad"),
        ("xpAwarded", -1),
        ("xpAwarded", True),
        ("xpAwarded", "5"),
        ("xpAwarded", float("nan")),
        ("xpAwarded", 2**53),
        ("tags", "retry"),
        ("tags", ["ok", 3]),
        ("title", None),
        ("repoId", 5),
        ("zone", "save"),
        ("zone", None),
        ("origin", "elsewhere"),
        ("foreign", "yes"),
        ("artifactFingerprint", "XYZ"),
    ],
)
def test_malformed_fields_are_rejected_by_both_validators(field, value):
    record = rom() | {field: value}
    err = _error(record)
    assert err.path.startswith(f"$.{field}")
    assert not model_accepts(record)


@pytest.mark.parametrize(
    "value", ["2026-02-28T23:59:60+05:30", "2024-02-29t00:00:00.1z", "2026-12-31T00:00:00-00:00"]
)
def test_rfc3339_timestamps_are_accepted(value):
    assert validate_record(rom() | {"timestamp": value})
    assert model_accepts(rom() | {"timestamp": value})


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@pytest.mark.parametrize("year", [0, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999])
def test_rfc3339_accepts_exactly_the_real_calendar_days(year):
    import calendar

    for month in range(1, 13):
        last = 29 if month == 2 and calendar.isleap(year) else _MONTH_DAYS[month - 1]
        for day in range(0, 33):
            value = f"{year:04d}-{month:02d}-{day:02d}T12:00:00Z"
            assert is_rfc3339(value) == (1 <= day <= last), value
    assert not is_rfc3339(f"{year:04d}-13-01T12:00:00Z")
    assert not is_rfc3339(f"{year:04d}-00-01T12:00:00Z")


@pytest.mark.parametrize("value", ["", "a" * 129, "has space", "slash/no", "é"])
def test_record_id_limit_is_named(value):
    err = _error(rom() | {"id": value})
    assert err.path == "$.id"
    assert ("128" in err.message) or "non-empty" in err.message


def test_id_of_128_allowed_characters_is_accepted():
    assert validate_record(rom() | {"id": "aZ0._:-" * 18 + "ab"})


def test_unknown_field_is_rejected_naming_the_field():
    err = _error(rom() | {"secretNotes": "x"}, "$.records[0]")
    assert err.path == "$.records[0].secretNotes"
    assert "unknown" in err.message


def test_errors_never_echo_field_values():
    for field in ("title", "id", "timestamp", "codebaseFingerprint", "impact", "repoId"):
        value: object = SECRET if field != "title" else 12345
        err = _error(rom() | {field: value})
        assert SECRET not in str(err) and "12345" not in str(err)


def test_duplicate_keys_cannot_smuggle_values_json_schema_is_strict():
    schema = record_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["portable"]["type"] == "boolean"
    assert "portable" in schema["required"]
    assert MemoryRecord.model_json_schema() == schema


# --- Agreement between the fast validator and the pydantic model -------------------------------------

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2**54),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(
        ["rom", "save", "native", "imported", "positive", "negative", "neutral", CBF, "0123456789", "true"]
    ),
    st.lists(st.text(max_size=3), max_size=2),
    st.lists(st.integers(), max_size=2),
    st.sampled_from(["2026-01-02T03:04:05Z", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "x"]),
)
_fields = st.sampled_from(
    sorted(
        set(rom())
        | {
            "zone",
            "origin",
            "foreign",
            "similarity",
            "markdownPath",
            "artifactFingerprint",
            "packageSlug",
            "embeddingEngine",
            "importedFrom",
            "extra",
        }
    )
)


@settings(max_examples=1500)
@given(
    base=st.sampled_from([rom(), save()]),
    changes=st.dictionaries(_fields, _values, max_size=3),
    drops=st.lists(_fields, max_size=2),
)
def test_fast_validator_and_model_make_the_same_decision(base, changes, drops):
    record = dict(base) | changes
    for name in drops:
        record.pop(name, None)
    try:
        validate_record(record)
        fast = True
    except RecordError:
        fast = False
    assert fast == model_accepts(record), record


def _outcome(record: dict) -> tuple[str, str] | None:
    try:
        validate_record(record, "$[7]")
    except RecordError as err:
        return (err.path, err.message)
    return None


@settings(max_examples=500)
@given(
    base=st.sampled_from([rom(), save()]),
    changes=st.dictionaries(_fields, _values, max_size=3),
    drops=st.lists(_fields, max_size=2),
)
def test_key_order_cache_changes_no_verdict_and_no_message(base, changes, drops):
    record = dict(base) | changes
    for name in drops:
        record.pop(name, None)
    records_mod._SHAPES.clear()
    cold = _outcome(record)
    # the same key order, first met on a record that passes (when the key set can pass at all)
    primer = {name: (value if name not in changes else base.get(name)) for name, value in record.items()}
    for name, good in (("markdownPath", None), ("zone", "rom" if primer.get("portable") else "save")):
        if name in primer:
            primer[name] = good
    records_mod._SHAPES.clear()
    _outcome(primer)
    assert _outcome(record) == cold
    assert _outcome(record) == cold  # and once more, from the cache


_WRONG = [None, "", "x", "not-a-date", -1, 1.5, True, [], ["a", 1], {}, "cbf1_" + "0" * 40, "rom", "save"]


def _mutants() -> list[dict]:
    """Each field of a valid record (both tiers) dropped, or replaced by each wrong-looking value."""
    out = []
    for base in (memory("m-1"), memory("m-2", portable=False, codebaseFingerprint=CBF, zone="save")):
        for name in [*sorted(records_mod.ALL_FIELDS), "extra"]:
            dropped = {k: v for k, v in base.items() if k != name}
            out.append(dropped)
            out.extend({**base, name: value} for value in _WRONG)
    return out


@pytest.mark.parametrize("record", _mutants())
def test_record_problems_decide_as_validate_record_does(record: dict) -> None:
    """`acx records check` lists every problem; it accepts exactly what the service accepts."""
    from acx.core.records import record_problems

    try:
        validate_record(record)
        valid = True
    except RecordError:
        valid = False
    problems = record_problems(record)
    assert (not problems) == valid
    assert all(p.path.startswith("$.") for p in problems)


def test_record_problems_finds_every_problem_not_only_the_first() -> None:
    from acx.core.records import record_problems

    bad = {**memory("m-1"), "impact": "great", "tags": [1], "timestamp": "yesterday", "colour": "red"}
    paths = sorted(p.path for p in record_problems(bad))
    assert paths == ["$.colour", "$.impact", "$.tags[0]", "$.timestamp"]
