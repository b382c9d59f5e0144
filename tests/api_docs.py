"""The route table of docs/API.md, read the way a user reads it, so tests hold code and docs equal."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_PATH = "/v1/packages/{pkg}"


def documented_routes() -> dict[tuple[str, str], str]:
    """(method, path template) -> scope for every route of docs/API.md's table."""
    routes: dict[tuple[str, str], str] = {}
    for line in (ROOT / "docs" / "API.md").read_text(encoding="utf-8").splitlines():
        # Split on "|" outside backticks (paths and bodies contain `rom|save`).
        cells = [c.strip() for c in re.split(r"\|(?=(?:[^`]*`[^`]*`)*[^`]*$)", line.strip().strip("|"))]
        if len(cells) < 3 or cells[0] not in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            continue
        for path in re.findall(r"`(/[^`]*)`", cells[1]):
            full = path if path.startswith(("/v1/", "/console")) else PACKAGE_PATH + path
            routes[(cells[0], full.split("?", 1)[0])] = cells[2]
    return routes
