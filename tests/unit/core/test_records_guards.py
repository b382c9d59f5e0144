"""The record contract at its edges: number limits, optional fields, and the pydantic model agreeing with
the fast validator on each case by name (the property test samples; these always run).

An uploader controls every field; each rejected case is a record the service must refuse with a path.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from acx.core import records as records_mod
from acx.core.records import MAX_SAFE_INTEGER, RecordError, model_accepts, validate_record
from tests.factories import CBF, memory


def rom(**changes: Any) -> dict[str, Any]:
    return memory(**changes)


def save(**changes: Any) -> dict[str, Any]:
    return rom(
        **{"id": "mem-2", "portable": False, "codebaseFingerprint": CBF, "repoId": "acme/api", **changes}
    )


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
        assert len(records_mod._SHAPES) <= 64
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
