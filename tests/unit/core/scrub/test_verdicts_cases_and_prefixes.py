"""Scrub verdicts at the edges: a NuGet password whatever the case of
its XML, Fly.io prefixes in any case drawing on the scan budget, a random run cut short by a leading
ellipsis, and the two allowances (changed non-ASCII runs, long runs) at their exact bounds.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import scan_text

RANDOM = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc"  # a random run with no word, sequence or pattern in it


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("add", ["<add", "<ADD", "<Add"])
def test_a_nuget_password_is_blocked_whatever_the_case_of_its_element(add: str) -> None:
    """The NuGet rule is case-insensitive (``<ADD KEY=...>`` is the same config entry to a reader), so
    its ``<add`` trigger must find the element in any case."""
    text = f'{add} key="ClearTextPassword" value="Zq8Lm3Xv9Rt2" />'
    assert _rules(text) == [("nuget-config-password", len(text) - len('Zq8Lm3Xv9Rt2" />'))]


@pytest.mark.parametrize("prefix", ["FO1_", "FM1", "FM2_", "Fo1_", "fM2_"])
def test_fly_io_prefixes_in_any_case_draw_on_the_scan_budget(prefix: str) -> None:
    """The Fly.io triggers are case-insensitive literals: 600 of them in upper or mixed case are 600
    candidates, more than the budget of a 3 KB buffer allows, and the buffer is refused (fail closed)."""
    assert _rules((prefix + " ") * 600) == [("scan-budget", 0)]
    assert _rules((prefix + " ") * 20) == []


@pytest.mark.parametrize("ellipsis", ["...", "\u2026"])
def test_a_random_run_after_an_ellipsis_is_an_excerpt(ellipsis: str) -> None:
    """``...6wqX6fNU``: a value shown cut short (three dots or the one-character ellipsis before it) is
    a reference excerpt; the same run without it is blocked as high entropy."""
    assert _rules(f"excerpt: {RANDOM} end") == [("high-entropy", 9)]
    assert _rules(f"excerpt: {ellipsis}{RANDOM} end") == []
    assert _rules(f"excerpt: {ellipsis} {RANDOM} end") == [("high-entropy", 10 + len(ellipsis.encode()))]


def test_changed_non_ascii_runs_are_allowed_up_to_256_plus_one_per_64_bytes() -> None:
    """An 8,320-byte buffer may hold 256 + 8320 // 64 = 386 runs that normalisation changes (full-width
    letters here); one more is refused as ``scan-budget`` rather than normalised."""
    n = 8320

    def buffer(runs: int) -> str:
        body = "\uff21 " * runs
        pad = n - len(body.encode())
        text = body + "x" * (pad % 5) + "word " * (pad // 5)
        assert len(text.encode()) == n
        return text

    assert _rules(buffer(386)) == []
    assert _rules(buffer(387)) == [("scan-budget", 0)]


def test_long_runs_are_allowed_up_to_512_plus_one_per_40_bytes() -> None:
    """A word run of 20 characters and a space, 1,077 times (22,617 bytes: 512 + 565 runs allowed), is
    judged and passes; 1,078 of them (22,638 bytes, 512 + 565 allowed) are refused as ``scan-budget``."""
    tok = "configurationmanager "
    assert 512 + len(tok * 1077) // 40 == 1077
    assert _rules(tok * 1077) == []
    assert 512 + len(tok * 1078) // 40 == 1077
    assert _rules(tok * 1078) == [("scan-budget", 0)]
