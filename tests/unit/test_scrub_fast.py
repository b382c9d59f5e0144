"""Fast paths of the scrub gate agree with the plain ones: needle guards and the home-path pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core import scrub

NEEDLES = [b"~/", b"Q~", b"\\Users\\", b"dapi", b"eyJ", b"~"]


def plain_find_all(buf: bytes, needle: bytes, step: int = 1) -> list[int]:
    out = []
    i = buf.find(needle)
    while i >= 0:
        out.append(i)
        i = buf.find(needle, i + step)
    return out


def plain_scan_home(buf: bytes) -> list[tuple[str, int, int, str]]:
    """The home-path pass before it was folded into one regex pass and guarded by memchr."""
    spans = []
    for trig in (b"/home/", b"/Users/", b"\\Users\\"):
        i = buf.find(trig)
        while i >= 0:
            start = i - 2 if trig == b"\\Users\\" and i >= 2 else i
            m = scrub._HOME.match(buf, start)
            if m is not None:
                spans.append(("home-path", start, m.end(), scrub.WARN))
            i = buf.find(trig, i + 1)
    i = buf.find(b"~/")
    while i >= 0:
        if i == 0 or buf[i - 1] in b" \t\n\"'`(=:\x00[{,":
            spans.append(("home-path", i, i + 2, scrub.WARN))
        i = buf.find(b"~/", i + 2)
    return spans


pieces = st.sampled_from(
    ["/home/", "/Users/", "C:\\Users\\", "\\Users\\", "~/", "~", "/", "\\", "home", "Users", "bob", " ", ":"]
)
texts = st.lists(pieces, max_size=30).map(lambda parts: "".join(parts).encode())


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(NEEDLES), st.sampled_from([1, 2]))
def test_find_all_finds_what_a_plain_search_finds(buf: bytes, needle: bytes, step: int) -> None:
    assert list(scrub._find_all(buf, needle, step)) == plain_find_all(buf, needle, step)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_home_pass_reports_what_the_per_needle_search_reported(buf: bytes) -> None:
    spans: list[tuple[str, int, int, str]] = []
    scrub._scan_home(buf, spans)
    assert sorted(spans) == sorted(plain_scan_home(buf))


def test_overlapping_home_paths_are_all_seen() -> None:
    spans: list[tuple[str, int, int, str]] = []
    scrub._scan_home(b"x /home/home/alice ~/a", spans)
    assert sorted(s[1] for s in spans) == [2, 7, 19]
