"""The Statement's first subject is the one that binds the manifest hash: it alone is checked, and a
good subject after a bad first one does not make the Statement acceptable.
"""

from __future__ import annotations

import json

import pytest

from acx.core import dsse
from tests import factories


def _payload(subject: object) -> bytes:
    st = factories.statement()
    st["subject"] = subject
    return json.dumps(st).encode()


def _good() -> dict:
    return factories.statement()["subject"][0]


def test_a_non_object_first_subject_is_no_subject_whatever_follows() -> None:
    with pytest.raises(dsse.DsseError, match="statement has no subject"):
        dsse.parse_statement(_payload(["x", _good()]))


def test_a_first_subject_without_a_digest_is_refused_whatever_follows() -> None:
    with pytest.raises(dsse.DsseError, match=r"subject\[0\]\.digest\.sha256 must be 64 hex chars"):
        dsse.parse_statement(_payload([{"name": "s"}, _good()]))


def test_subjects_after_a_good_first_one_are_not_read() -> None:
    st = dsse.parse_statement(_payload([_good(), "x"]))
    assert st["subject"][0] == _good()
    assert dsse.parse_statement(_payload([_good(), {"name": "no digest"}]))["subject"][1] == {
        "name": "no digest"
    }
