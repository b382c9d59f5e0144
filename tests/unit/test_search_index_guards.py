"""The index segment as bytes read back from S3: a damaged or forged segment is a ``SegmentError``
(the index is then rebuilt from the records), never a wrong answer, a crash or a silent miss. Every
damage here is made at a place the parsed layout names (``Packed.sections``), as a bit flip or a
truncated upload would make it.
"""

from __future__ import annotations

import pytest

from acx.core.embedding import LocalHash128
from acx.core.search import to_docs
from acx.core.search.ranking import IndexView
from acx.core.search.segment import Packed, Segment, SegmentError

ENGINE = LocalHash128()


def _rec(rid: str, title: str, **over: object) -> dict:
    return {"id": rid, "title": title, "summary": "", "portable": True, "tags": [], **over}


def _bytes() -> bytearray:
    seg = Segment.build(
        ENGINE.id,
        ENGINE.dim,
        to_docs([_rec("a", "alpha beta", tags=["ops"]), _rec("b", "beta gamma", portable=False)], ENGINE),
    )
    return bytearray(seg.to_bytes())


def _put_u32(data: bytearray, section: str, item: int, value: int) -> bytes:
    offset, count = Packed.parse(bytes(data)).sections[section]
    at = offset + 4 * (item % count)
    data[at : at + 4] = value.to_bytes(4, "little")
    return bytes(data)


def _refused_everywhere(data: bytes) -> None:
    with pytest.raises(SegmentError):
        IndexView(ENGINE.id, ENGINE.dim, [Packed.parse(data)])
    with pytest.raises(SegmentError):
        Segment.from_bytes(data)


def test_term_offsets_that_overrun_the_term_text_are_refused() -> None:
    data = _bytes()
    terms_len = Packed.parse(bytes(data)).sections["terms_text"][1]
    _refused_everywhere(_put_u32(data, "term_offs", -1, terms_len + 3))
