"""The reasons validate_record gives: a record without ``portable`` is told that portable is required
and must be a boolean, and an id of the wrong characters or length is told which characters and how
many, not that it must be a non-empty string."""

from __future__ import annotations

import pytest

from acx.core import records as records_mod
from acx.core.records import MSG_PORTABLE_MISSING, RecordError, validate_record
from tests.factories import memory


@pytest.mark.parametrize("also_missing", [(), ("title",), ("id", "summary")])
def test_a_record_without_portable_is_told_portable_is_required_and_boolean(also_missing: tuple) -> None:
    record = memory()
    del record["portable"]
    for name in also_missing:
        del record[name]
    records_mod._SHAPES.clear()
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
