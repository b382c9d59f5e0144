"""Scrub verdicts on tokens, hosts and their edges, each as a client sees it."""

from __future__ import annotations

import pytest

from acx.core.scrub import judge, scan_text

SOPS = (
    "db-password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BCBMbnKsXYuzBuCuVQt8RV9bOv5HgdpL+iwmns="
    ",tag:KkQfh6OymvCt4uC13p318g==,type:str]"
)


@pytest.mark.parametrize("gap", ["\n", "\n" * 40, " # rotated 2026-11\n"])
@pytest.mark.parametrize(
    ("after", "rule"),
    [
        ("q7Rk2mXv9Lp4Zt8Wn3Bc6Hd1Jf5Gs0Ac", "high-entropy"),
        ("password = 'q7Rk2mXv9Lp4Zt8Wn3Bc6Hd1'", "secret-assignment"),
    ],
)
def test_a_sops_ciphertext_covers_itself_not_the_text_after_it(gap: str, after: str, rule: str) -> None:
    # A SOPS value is encrypted by design (public), up to its closing bracket: a secret after it in
    # the same text is still judged, a bare random token included (the public range is what the
    # random-run rule skips; one reaching the end of the text would have hidden it).
    assert scan_text(SOPS) == []
    assert rule in {f.rule for f in scan_text(after)}
    assert rule in {f.rule for f in scan_text(SOPS + gap + after)}


@pytest.mark.parametrize(
    "value",
    [b"2024-01-15T10:30:00", b"1234-5678-9012-3456", b"+1-202-555-0173-99", b"2024-01-15_10-30-00_0001"],
)
def test_digits_and_separators_without_four_letters_are_not_token_like(value: bytes) -> None:
    # token_like's contract: letters AND digits (or random). A timestamp or a card-like number has
    # digits but fewer than four letters.
    assert not judge.token_like(value)


def test_four_letters_and_four_digits_make_a_token_shape() -> None:
    assert judge.token_like(b"ab12-cd34-5678-9012")
    assert not judge.token_like(b"a112-c934-5678-9012")  # three letters
