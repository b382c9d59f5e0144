"""The ``---`` frontmatter of a SKILL.md, read for the ``acx_skill`` index (name, description, license).

Not a YAML parser: only top-level ``key: value`` scalars, which is all the index needs; anything
else is ignored rather than guessed at.
"""

from __future__ import annotations


def parse_frontmatter(text: str) -> dict[str, str]:
    """Top-level ``key: value`` scalars of a ``---`` YAML frontmatter block (enough for SKILL.md)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if not line or line[0].isspace() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value:
            out[key.strip()] = value
    return out
