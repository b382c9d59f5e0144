"""The memory record contract: tier rules with the standard's messages, strict types, no value echo."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core import records as records_mod
from acx.core.records import (
    ALL_FIELDS,
    MAX_SAFE_INTEGER,
    MSG_PORTABLE_MISSING,
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


def rom(**changes: Any) -> dict[str, Any]:
    return memory(**changes)


def save(**changes: Any) -> dict[str, Any]:
    return rom(
        **{"id": "mem-2", "portable": False, "codebaseFingerprint": CBF, "repoId": "acme/api", **changes}
    )


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


# A valid record (ROM or SAVE) with up to three fields set to arbitrary values and up to two dropped.
_EDITS = {
    "base": st.sampled_from([rom(), save()]),
    "changes": st.dictionaries(_fields, _values, max_size=3),
    "drops": st.lists(_fields, max_size=2),
}


def _edited(base: dict, changes: dict, drops: list) -> dict:
    record = dict(base) | changes
    for name in drops:
        record.pop(name, None)
    return record


@settings(max_examples=1500)
@given(**_EDITS)
def test_fast_validator_and_model_make_the_same_decision(base, changes, drops):
    record = _edited(base, changes, drops)
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
@given(**_EDITS)
def test_key_order_cache_changes_no_verdict_and_no_message(base, changes, drops):
    record = _edited(base, changes, drops)
    # Private: the key-order cache is process-wide and no public call empties it, so only clearing it
    # makes sure the first call below takes the uncached path.
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


# The record contract at its edges: number limits, optional fields, and the pydantic model agreeing with
# the fast validator on each case by name (the property test samples; these always run).
#
# An uploader controls every field; each rejected case is a record the service must refuse with a path.


def _refusal(record: Any) -> RecordError:
    with pytest.raises(RecordError) as caught:
        validate_record(record, "$.records[2]")
    return caught.value


@pytest.mark.parametrize(
    "xp", [0, 0.0, 1, 1.0, 0.5, 1e-300, 1e300, MAX_SAFE_INTEGER, float(MAX_SAFE_INTEGER)]
)
def test_xp_at_the_edges_of_the_range_is_accepted_by_both(xp: Any) -> None:
    record = rom(xpAwarded=xp)
    assert validate_record(record) is record
    assert model_accepts(record)


@pytest.mark.parametrize(
    "xp",
    [
        -1,
        -0.5,
        -1e-300,
        -1e300,
        math.inf,
        -math.inf,
        math.nan,
        MAX_SAFE_INTEGER + 1,
        2**64,
        True,
        False,
        None,
        "1",
    ],
)
def test_xp_outside_the_range_is_refused_by_both(xp: Any) -> None:
    record = rom(xpAwarded=xp)
    err = _refusal(record)
    assert err.path == "$.records[2].xpAwarded"
    assert str(MAX_SAFE_INTEGER) in err.message
    assert not model_accepts(record)


# Every tier rule, each refused by both validators (the model is the JSON Schema's source: a rule it
# missed would let a schema-valid record through another implementation).
TIER_CASES = [
    (rom(codebaseFingerprint=CBF), "codebaseFingerprint", records_mod.MSG_TRUE_NEEDS_NULL_CBF),
    (rom(repoId="acme/api"), "repoId", records_mod.MSG_TRUE_NEEDS_NULL_REPO),
    (save(codebaseFingerprint=None), "codebaseFingerprint", records_mod.MSG_FALSE_NEEDS_CBF),
    (rom(zone="save"), "zone", "must match the tier"),
    (save(zone="rom"), "zone", "must match the tier"),
]


@pytest.mark.parametrize(("record", "field", "message"), TIER_CASES)
def test_tier_rules_are_refused_by_both_validators(record: dict[str, Any], field: str, message: str) -> None:
    err = _refusal(record)
    assert err.path == f"$.records[2].{field}"
    assert message in err.message
    assert not model_accepts(record)


@pytest.mark.parametrize(
    "record",
    [
        rom(),
        save(),
        rom(zone="rom"),
        save(zone="save"),
        save(repoId=None),
        rom(xpAwarded=0),
        rom(tags=[]),
        rom(similarity=-0.5),
        rom(similarity=None),
        rom(similarity=-MAX_SAFE_INTEGER),
        rom(markdownPath=None, embeddingEngine="e", importedFrom=None, packageSlug="p"),
        rom(artifactFingerprint="0123456789", origin="imported", foreign=False),
        rom(timestamp="2024-02-29T00:00:00+14:00"),
        rom(id="a" * 128),
    ],
)
def test_valid_records_are_accepted_by_both(record: dict[str, Any]) -> None:
    assert validate_record(record) is record
    assert model_accepts(record)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"similarity": math.inf}, "similarity", "finite number or null"),
        ({"similarity": math.nan}, "similarity", "finite number or null"),
        ({"similarity": MAX_SAFE_INTEGER + 1}, "similarity", "finite number or null"),
        ({"similarity": -MAX_SAFE_INTEGER - 1}, "similarity", "finite number or null"),
        ({"similarity": "0.5"}, "similarity", "finite number or null"),
        ({"similarity": True}, "similarity", "finite number or null"),
        ({"markdownPath": 3}, "markdownPath", "must be a string or null"),
        ({"embeddingEngine": ["e"]}, "embeddingEngine", "must be a string or null"),
        ({"importedFrom": 1}, "importedFrom", "must be a string or null"),
        ({"packageSlug": False}, "packageSlug", "must be a string or null"),
        ({"artifactFingerprint": None}, "artifactFingerprint", "must match"),
        ({"artifactFingerprint": "01234567890"}, "artifactFingerprint", "must match"),
        ({"zone": "ram"}, "zone", "must be rom or save"),
        ({"foreign": None}, "foreign", "must be a boolean"),
        ({"foreign": 0}, "foreign", "must be a boolean"),
        ({"origin": None}, "origin", "must be native or imported"),
        ({"codebaseFingerprint": 5}, "codebaseFingerprint", "must match"),
        ({"repoId": ["acme"]}, "repoId", "must be a string or null"),
        ({"impact": ["neutral"]}, "impact", "must be one of"),
        ({"impact": "Neutral"}, "impact", "must be one of"),
        ({"timestamp": 1767323045}, "timestamp", "RFC 3339"),
        ({"id": 7}, "id", "must be a non-empty string"),
        ({"id": None}, "id", "must be a non-empty string"),
        ({"summary": 1}, "summary", "must be a string"),
        ({"sourceType": None}, "sourceType", "must be a string"),
        ({"repoLabel": b"x"}, "repoLabel", "must be a string"),
        ({"projectLabel": 0}, "projectLabel", "must be a string"),
        ({"tags": ("a",)}, "tags", "must be an array of strings"),
    ],
)
def test_a_bad_field_is_refused_by_both_naming_it(changes: dict[str, Any], field: str, message: str) -> None:
    record = rom(**changes)
    err = _refusal(record)
    assert err.path == f"$.records[2].{field}"
    assert message in err.message
    assert not model_accepts(record)


def test_a_bad_tag_is_named_by_its_index() -> None:
    err = _refusal(rom(tags=["ok", "fine", None]))
    assert err.path == "$.records[2].tags[2]"


@pytest.mark.parametrize("name", [n for n in records_mod.REQUIRED_FIELDS if n != "portable"])
def test_a_missing_required_field_is_named(name: str) -> None:
    record = {k: v for k, v in rom().items() if k != name}
    err = _refusal(record)
    assert err.path == f"$.records[2].{name}" and err.message == "is required"
    assert not model_accepts(record)


def test_not_an_object_is_refused() -> None:
    for value in ([], "record", None, 1):
        err = _refusal(value)
        assert err.path == "$.records[2]" and "JSON object" in err.message


def test_unknown_fields_are_named_in_sorted_order() -> None:
    err = _refusal(rom(zzz=1, aaa=2))
    assert err.path == "$.records[2].aaa"


def test_the_key_order_cache_stays_bounded_and_keeps_deciding() -> None:
    optional = [
        "markdownPath",
        "embeddingEngine",
        "importedFrom",
        "packageSlug",
        "similarity",
        "origin",
        "foreign",
    ]
    for n in range(200):
        record = rom()
        chosen = [name for bit, name in enumerate(optional) if n >> bit & 1]
        for name in chosen:
            record[name] = {"origin": "native", "foreign": True}.get(name)
        # a fresh key order every time: rotate the keys
        items = list(record.items())
        shift = n % len(items)
        rotated = dict(items[shift:] + items[:shift])
        assert validate_record(rotated) is rotated
        assert len(records_mod._SHAPES) <= 64  # private: its memory bound shows in no answer
    bad = rom(similarity=math.inf)
    validate_record(rom(similarity=0.5))  # same key order, cached, as a passing record
    assert _refusal(bad).path == "$.records[2].similarity"


def test_json_schema_carries_the_safe_integer_limit() -> None:
    schema = records_mod.record_json_schema()
    variants = schema["properties"]["xpAwarded"]["anyOf"]
    assert {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER} in variants
    with pytest.raises(AttributeError):
        records_mod.NoSuchThing  # noqa: B018 - the module's lazy __getattr__ must not invent names


def test_an_unknown_field_name_is_cut_to_64_characters_in_the_path() -> None:
    """The name is attacker-sized; the error carries a bounded prefix of it, never more."""
    long_name = "x" * 500
    err = _refusal(rom(**{long_name: 1}))
    assert err.path == "$.records[2]." + "x" * 64


def test_a_non_string_key_is_refused_without_echoing_it() -> None:
    record: dict[Any, Any] = rom()
    record[12345] = "v"
    err = _refusal(record)
    assert "unknown field" in err.message and "12345" not in str(err)


def test_the_integer_limit_is_javascripts_max_safe_integer_written_out() -> None:
    """Known answer, not the module's own constant: 2^53 - 1 is the largest integer every JSON reader
    (a JavaScript one included) holds exactly; one more is refused, and the message says the number."""
    assert validate_record(rom(xpAwarded=9007199254740991))["xpAwarded"] == 9007199254740991
    assert model_accepts(rom(xpAwarded=9007199254740991))
    err = _refusal(rom(xpAwarded=9007199254740992))
    assert "9007199254740991" in err.message
    assert not model_accepts(rom(xpAwarded=9007199254740992))
    assert validate_record(rom(similarity=-9007199254740991)) is not None
    assert _refusal(rom(similarity=-9007199254740992)).path == "$.records[2].similarity"


# A record holding every field the standard names, optional ones included, is valid: the unknown
# field check must accept the complete set, not only a proper subset of it.


def _complete() -> dict:
    return memory(
        zone="rom",
        markdownPath=None,
        artifactFingerprint="0123456789",
        foreign=False,
        embeddingEngine=None,
        origin="native",
        importedFrom=None,
        packageSlug=None,
        similarity=None,
    )


def test_a_record_with_every_field_is_valid() -> None:
    record = _complete()
    assert set(record) == ALL_FIELDS
    records_mod._SHAPES.clear()  # private: only an empty cache makes sure the key checks run here
    assert validate_record(record) is record
    assert validate_record(dict(record)) == record  # and the cached key order gives the same verdict


# The reasons validate_record gives: a record without ``portable`` is told that portable is required
# and must be a boolean, and an id of the wrong characters or length is told which characters and how
# many, not that it must be a non-empty string.


@pytest.mark.parametrize("also_missing", [(), ("title",), ("id", "summary")])
def test_a_record_without_portable_is_told_portable_is_required_and_boolean(also_missing: tuple) -> None:
    record = memory()
    del record["portable"]
    for name in also_missing:
        del record[name]
    with pytest.raises(RecordError) as info:
        validate_record(record, "$.records[2]")
    assert info.value.path == "$.records[2].portable"
    assert (
        info.value.message
        == MSG_PORTABLE_MISSING
        == "portable is required and must be a boolean (true or false)"
    )


@pytest.mark.parametrize("bad_id", ["has space", "slash/in/it", "é", "a" * 129])
def test_an_id_of_other_characters_or_too_long_is_told_the_allowed_characters(bad_id: str) -> None:
    record = memory(id=bad_id)
    with pytest.raises(RecordError) as info:
        validate_record(record)
    assert info.value.path == "$.id"
    assert info.value.message == "must be 1-128 characters of [A-Za-z0-9._:-]"


@pytest.mark.parametrize("bad_id", ["", None, 7])
def test_an_empty_or_non_string_id_is_told_it_must_be_a_non_empty_string(bad_id: object) -> None:
    record = memory(id=bad_id)
    with pytest.raises(RecordError) as info:
        validate_record(record)
    assert (info.value.path, info.value.message) == ("$.id", "must be a non-empty string")
