"""acx: the memory cartridge service core, adapters, use cases, CLI and local stack.

For a Python program: ``from acx import Memory`` (:class:`acx.client.memory.Memory`), and its
results and error (``AcxError``). They are loaded on first use, so the service's functions, which
import ``acx.*`` modules, never pay for them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AcxError",
    "Forgotten",
    "History",
    "Hit",
    "Item",
    "Memory",
    "Page",
    "Remembered",
    "SearchResult",
    "Updated",
    "Version",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from acx.client import memory

        return getattr(memory, name)
    raise AttributeError(f"module 'acx' has no attribute {name!r}")
