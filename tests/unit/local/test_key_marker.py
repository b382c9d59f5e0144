"""``moto_dynamodb._key_marker`` (one pass, two-attribute keys ordered by one comparison) gives the
marker of the generator + ``sorted`` form it replaced, on every key form, errors included."""

from __future__ import annotations

import json
from typing import Any

from acx.local.moto_dynamodb import _contains_duplicates, _key_marker


def _marker_before(key: Any) -> Any:
    """The form before round 7 (acx/local/moto_dynamodb.py at 6b8de44)."""
    if isinstance(key, dict) and all(isinstance(av, dict) and len(av) == 1 for av in key.values()):
        marker = tuple(sorted((n, *next(iter(av.items()))) for n, av in key.items()))
        try:
            hash(marker)
            return marker
        except TypeError:
            pass
    return json.dumps(key, sort_keys=True, default=repr) if not isinstance(key, str) else key


class _Dict(dict):  # type: ignore[type-arg]
    pass


KEYS: list[Any] = [
    {"pk": {"S": "t#a#p#x"}, "sk": {"S": "e#0001"}},
    {"sk": {"S": "e#0001"}, "pk": {"S": "t#a#p#x"}},  # the same key, other order
    {"pk": {"S": "a"}},
    {"pk": {"S": "a"}, "sk": {"N": "12"}, "zz": {"B": b"\x00\x01"}},
    {"c": {"S": "1"}, "a": {"S": "2"}, "b": {"S": "3"}},
    {"pk": {"B": b"k"}, "sk": {"B": b"j"}},
    {"pk": {"S": "a"}, "sk": {"SS": ["x", "y"]}},  # unhashable value: canonical JSON
    {"pk": {"S": "a"}, "sk": {"S": "b", "N": "1"}},  # two tags
    {"pk": {"S": "a"}, "sk": "plain"},  # not an attribute value
    {"pk": {"S": "a"}, "sk": {}},
    {},
    {"pk": _Dict(S="a"), "sk": {"S": "b"}},  # dict subclasses count as dicts
    _Dict(pk={"S": "a"}, sk={"S": "b"}),
    {"pk": {"S": "a"}, "pk2": {"S": "a"}},
    {"b": {"S": "same"}, "a": {"S": "same"}},
    "a string key",
    ["a", "list"],
    None,
    7,
    {"pk": {"S": "a"}, "sk": {"M": {"x": {"S": "y"}}}},
]


def test_same_marker_as_before_on_every_form() -> None:
    for key in KEYS:
        assert _key_marker(key) == _marker_before(key), key
        assert type(_key_marker(key)) is type(_marker_before(key)), key


def test_mixed_name_types_raise_as_before() -> None:
    key = {1: {"S": "a"}, "sk": {"S": "b"}}
    errors = []
    for fn in (_key_marker, _marker_before):
        try:
            fn(key)
        except TypeError as exc:
            errors.append(type(exc))
    assert errors == [TypeError, TypeError]


def test_duplicates_found_across_attribute_order() -> None:
    a = {"pk": {"S": "p"}, "sk": {"S": "s"}}
    b = {"sk": {"S": "s"}, "pk": {"S": "p"}}
    assert _contains_duplicates(None, [a, b])
    assert not _contains_duplicates(None, [a, {"pk": {"S": "p"}, "sk": {"S": "t"}}])
    assert not _contains_duplicates(None, [a, {"pk": {"S": "p"}, "sk": {"B": b"s"}}])
