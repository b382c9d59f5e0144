"""The mutation run's seeded sample (scripts/mutate.py): a wider sample widens the same draw, and
another seed draws another sample, so "the floor holds on a re-drawn sample" can be checked."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def mutate():
    spec = importlib.util.spec_from_file_location("acx_mutate_script", ROOT / "scripts" / "mutate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _drawn(mutate, cfg, size: int) -> set[str]:
    plan = mutate.select(cfg, ["merge"], mutate.load_equivalents(cfg.equivalent_file), size)
    return {m.ident for m in plan["merge"]["mutants"]}


def test_a_wider_sample_contains_the_narrower_one(mutate, monkeypatch) -> None:
    # merge's pool (~400 mutants) is where random.sample would switch algorithm between 40 and 100.
    monkeypatch.chdir(ROOT)
    cfg = mutate.load_config(mutate.DEFAULT_CONFIG)
    narrow, wide = _drawn(mutate, cfg, 40), _drawn(mutate, cfg, 100)
    assert len(narrow) == 40 and len(wide) == 100
    assert narrow <= wide


def test_another_seed_draws_another_sample(mutate, monkeypatch) -> None:
    from dataclasses import replace

    monkeypatch.chdir(ROOT)
    cfg = mutate.load_config(mutate.DEFAULT_CONFIG)
    assert _drawn(mutate, cfg, 40) != _drawn(mutate, replace(cfg, seed=cfg.seed + 1), 40)
