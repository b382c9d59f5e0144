"""A record holding every field the standard names, optional ones included, is valid: the unknown
field check must accept the complete set, not only a proper subset of it."""

from __future__ import annotations

from acx.core import records as records_mod
from acx.core.records import ALL_FIELDS, validate_record
from tests.factories import memory


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
    records_mod._SHAPES.clear()  # the first sight of this key order runs the key checks
    assert validate_record(record) is record
    assert validate_record(dict(record)) == record  # and the cached key order gives the same verdict
