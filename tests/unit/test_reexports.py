"""``acx.reexports``: a package whose ``__init__`` only re-exports names of its submodules, loaded a
name at a time; the same objects, and a normal import whenever the ``__init__`` does anything else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acx.reexports import _plan, lazy_reexports

ROOT = Path(__file__).resolve().parents[2]
PKG = "aws_lambda_powertools.event_handler"
DATA = "aws_lambda_powertools.utilities.data_classes"


def _child(code: str) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions" / "api"), str(ROOT / "layers" / "acx")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_api_function_loads_one_resolver_and_every_name_is_the_packages() -> None:
    out = _child(
        f"""
        import importlib, json, sys
        import app  # the api function's init
        before = sorted(m for m in sys.modules if m.startswith(("{PKG}.", "{DATA}.")))
        asyncio = "asyncio" in sys.modules
        names = {{}}
        for p in ("{PKG}", "{DATA}"):
            pkg = sys.modules[p]
            names.update({{p + ":" + n: (getattr(pkg, n).__module__, getattr(pkg, n).__qualname__)
                          for n in pkg.__all__}})
        from {PKG} import AppSyncResolver, Response
        print(json.dumps({{"before": before, "asyncio": asyncio, "names": names,
                          "same": Response is importlib.import_module("{PKG}.api_gateway").Response}}))
        """
    )
    normal = _child(
        f"""
        import importlib, json
        names = {{}}
        for p in ("{PKG}", "{DATA}"):
            pkg = importlib.import_module(p)
            names.update({{p + ":" + n: (getattr(pkg, n).__module__, getattr(pkg, n).__qualname__)
                          for n in pkg.__all__}})
        print(json.dumps({{"names": names}}))
        """
    )
    for resolver in ("appsync", "bedrock_agent", "vpc_lattice", "lambda_function_url", "events_appsync"):
        assert not any(m.startswith(f"{PKG}.{resolver}") for m in out["before"]), resolver
    assert f"{PKG}.api_gateway" in out["before"] and not out["asyncio"]
    assert len([m for m in out["before"] if m.startswith(DATA)]) <= 12  # of ~45 event modules
    assert out["names"] == normal["names"] and len(out["names"]) >= 60
    assert out["same"]


@pytest.mark.parametrize(
    "source",
    [
        "from .a import A\nprint('side effect')\n",
        "from .a import *\n",
        "from os import path\n",
        "from . import a\n",
        "import json\n",
        "X = 1\n",
    ],
)
def test_an_init_that_does_more_than_re_export_is_imported_as_usual(source: str) -> None:
    assert _plan("pkg", '"""doc"""\n' + source) is None


def test_the_plan_maps_each_name_to_its_submodule() -> None:
    source = '"""doc"""\nfrom .a import A, B as C\nfrom pkg.sub.b import D\n__all__ = ["A", "C", "D"]\n'
    assert _plan("pkg", source) == {"A": ("pkg.a", "A"), "C": ("pkg.a", "B"), "D": ("pkg.sub.b", "D")}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """Writes a package ``name`` (``__init__`` = ``init``, submodules ``fast`` and ``slow``) on the path;
    every module of it is dropped from ``sys.modules`` afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def make(name: str, init: str) -> None:
        root = tmp_path / name
        root.mkdir()
        (root / "__init__.py").write_text(init)
        (root / "fast.py").write_text("class Fast: ...\n")
        (root / "slow.py").write_text("import sys\nsys.modules['slow_was_run'] = sys\nclass Slow: ...\n")
        names.append(name)

    yield make
    for m in [m for m in sys.modules if m.startswith(tuple(names)) or m == "slow_was_run"]:
        del sys.modules[m]


def test_a_re_export_package_loads_a_name_when_it_is_read(package: Callable[[str, str], None]) -> None:
    package("lazypkg", "from .fast import Fast\nfrom .slow import Slow\n")
    assert lazy_reexports("lazypkg") is True
    assert lazy_reexports("lazypkg") is False  # already registered
    from lazypkg import Fast  # type: ignore[import-not-found]

    assert Fast.__module__ == "lazypkg.fast" and "slow_was_run" not in sys.modules
    import lazypkg

    assert lazypkg.__all__ == ["Fast", "Slow"]
    assert lazypkg.Slow.__module__ == "lazypkg.slow" and "slow_was_run" in sys.modules
    with pytest.raises(AttributeError):
        lazypkg.Missing  # noqa: B018


def test_a_name_that_is_also_a_submodule_is_the_value_the_init_leaves(
    package: Callable[[str, str], None],
) -> None:
    # ``from .slow import Slow as fast``: after the __init__, ``pkg.fast`` is the class, not the
    # submodule ``pkg.fast``, and importing that submodule later does not rebind it.
    package("shadowpkg", "from .fast import Fast\nfrom .slow import Slow as fast\n")
    assert lazy_reexports("shadowpkg") is True
    import shadowpkg  # type: ignore[import-not-found]
    import shadowpkg.fast  # the submodule, imported after

    assert shadowpkg.fast.__name__ == "Slow" and shadowpkg.Fast.__module__ == "shadowpkg.fast"
