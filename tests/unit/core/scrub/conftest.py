"""What the scrub tests share: the verdict a client sees as (rule, offset) pairs, and planted values.

Imported by name (``from tests.unit.core.scrub.conftest import named``); planted values are fake.
"""

from __future__ import annotations

from acx.core.scrub import scan_text

# A GitHub personal access token of the right shape (its checksum is not valid, so only the rule's
# pattern names it, never the checksum path).
GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"
# 27 token characters with no word, sequence or pattern in them: random to every judgement.
RANDOM_RUN_27 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7"


def named(text: str) -> list[tuple[str, int]]:
    """Each finding ``scan_text`` reports for ``text`` as its rule and byte offset, in report order."""
    return [(f.rule, f.offset) for f in scan_text(text)]
