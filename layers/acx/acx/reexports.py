"""Load a package whose ``__init__`` only re-exports its submodules' names one name at a time.

Why: ``aws_lambda_powertools.event_handler/__init__.py`` is nothing but ``from .x import A, B``
lines for every resolver it ships (AppSync with asyncio, Bedrock agents, VPC Lattice, Lambda
function URLs), ``utilities/data_classes/__init__.py`` the same for ~45 event classes, and Python
runs a package's ``__init__`` before any of its submodules. The api function uses one resolver and
the seven event classes it reads, so every cold start paid for all of them (~0.04 s + ~0.015 s of
CPU of the api function's init; bench search, cold row).

``lazy_reexports(name)`` reads the package's ``__init__.py`` (its syntax tree, not its code) and,
when every statement is a docstring, an ``__all__`` list or a ``from <its own submodule> import
names`` line, registers the package with a module ``__getattr__`` that imports a name's submodule
when the name is first read: the same objects from the same modules, loaded when asked for.
A name that is also a submodule's is bound at once, as the ``__init__`` leaves it. Anything else in
the ``__init__`` (code, star imports, imports from elsewhere) and the package is imported as usual.
What it does NOT do: change what any name is, or speed up a caller that reads every name.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
import threading
from typing import Any

_LOCK = threading.RLock()


def _plan(package: str, source: str) -> dict[str, tuple[str, str]] | None:
    """Exported name -> (absolute submodule, name there); None if the ``__init__`` does more."""
    names: dict[str, tuple[str, str]] = {}
    for i, node in enumerate(ast.parse(source).body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            return None
        module = ("." * node.level + node.module) if node.level else node.module
        absolute = importlib.util.resolve_name(module, package) if node.level else module
        if not absolute.startswith(package + "."):
            return None
        for alias in node.names:
            if alias.name == "*":
                return None
            names[alias.asname or alias.name] = (absolute, alias.name)
    return names


def lazy_reexports(package: str) -> bool:
    """Register ``package`` with its re-exports loaded on first read; False (and the package left
    to a normal import) when it is already imported or its ``__init__`` is not only re-exports."""
    with _LOCK:
        if package in sys.modules:
            return False
        spec = importlib.util.find_spec(package)
        if spec is None or spec.loader is None or not spec.submodule_search_locations or not spec.origin:
            return False
        with open(spec.origin, encoding="utf-8") as f:
            plan = _plan(package, f.read())
        if plan is None:
            return False
        module = importlib.util.module_from_spec(spec)
        all_names = sorted(plan)

        def __getattr__(attr: str) -> Any:  # PEP 562: only for names the module does not have yet
            if attr == "__all__":
                return all_names
            target = plan.get(attr)
            if target is None:
                raise AttributeError(f"module {package!r} has no attribute {attr!r}")
            value = getattr(importlib.import_module(target[0]), target[1])
            setattr(module, attr, value)
            return value

        module.__dict__["__getattr__"] = __getattr__
        sys.modules[package] = module
        parent, _, child = package.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
        # A name that is also a submodule's (``from .event_source import event_source``): the
        # ``__init__`` leaves it bound to the imported value, with that submodule already imported
        # if the ``__init__`` imports from it (so a later import of it rebinds nothing). Both now.
        here = {n.partition(".")[0] for loc in spec.submodule_search_locations for n in os.listdir(loc)}
        sources = {source for source, _ in plan.values()}
        for name in sorted(here & set(plan)):
            if f"{package}.{name}" in sources:
                importlib.import_module(f"{package}.{name}")
            __getattr__(name)
        return True
