"""The fast canonical writer on lists: every number it rewrites inside a list (an integral float, a
negative zero, one inside a nested list or object) is written as RFC 8785 writes it.
"""

from __future__ import annotations

import rfc8785

from acx.core.canonical import dumps_record


def test_integral_floats_inside_a_list_are_written_as_integers() -> None:
    # RFC 8785 writes 1.0 as 1 and -0.0 as 0 wherever the number sits; a record's scores list is hashed
    # through the fast path, so it must write the same bytes as the reference writer.
    value = {"scores": [1.0, -0.0, 2.5], "nested": [[3.0], {"x": 4.0}]}
    expected = b'{"nested":[[3],{"x":4}],"scores":[1,0,2.5]}'
    assert rfc8785.dumps(value) == expected
    assert dumps_record(value) == expected
    assert dumps_record([1.0, 2.5]) == b"[1,2.5]"
