"""A literal trigger matches in any case, so each case-swapped copy is a candidate of every rule whose
trigger it spells, and each of those rule runs draws on the scan budget (``512 + len // 256``, engine
docstring), even when the rule itself is case-sensitive and then rejects the window.

``SK-OR-V1-`` spells two triggers: OpenAI's ``sk-`` (four rules behind it) and OpenRouter's
``sk-or-v1-`` (one rule). One copy costs 1 (the prefilter hit) + 4 + 1 = 6 steps. ``n`` copies of
``SK-OR-V1- `` (10 bytes each) have a budget of ``512 + 10 * n // 256``: 85 copies cost 510 (within
515), 86 cost 516 (over 515) and are refused. A trigger made case-sensitive (or dropped) makes a copy
cost less, and 86 copies then pass unrefused.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import scan_text


def _refused(text: str) -> bool:
    return [f.rule for f in scan_text(text)] == ["scan-budget"]


@pytest.mark.parametrize("spelling", ["SK-OR-V1-", "Sk-Or-V1-", "sK-oR-v1-"])
def test_each_case_swapped_copy_costs_one_step_per_rule_behind_the_triggers_it_spells(spelling: str) -> None:
    assert not _refused((spelling + " ") * 85)
    assert _refused((spelling + " ") * 86)
