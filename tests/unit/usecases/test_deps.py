"""``deps()``: the Deps set by ``use`` (the local stack's backend), else the AWS adapters."""

from __future__ import annotations

from acx.usecases import deps as deps_module
from tests.fakes import fake_deps


def test_use_makes_deps_return_the_given_deps_until_it_is_handed_back() -> None:
    mine = fake_deps()
    before = deps_module.use(mine)
    try:
        assert deps_module.deps() is mine
        inner = fake_deps()
        assert deps_module.use(inner) is mine  # a nested user gets the one it replaces...
        assert deps_module.deps() is inner
        assert deps_module.use(mine) is inner  # ...and hands it back
        assert deps_module.deps() is mine
    finally:
        assert deps_module.use(before) is mine
    assert deps_module.deps() is not mine  # the control: without an override, the AWS adapters
