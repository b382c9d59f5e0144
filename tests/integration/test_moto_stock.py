"""tests/integration/moto_stock.py names what is not moto's own on the classes the adapters use."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.moto_ed25519 import ed25519_kms
from tests.integration.moto_stock import patched_moto


def test_stock_moto_has_nothing_to_name_and_a_patch_is_named_until_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto.dynamodb.models import DynamoDBBackend

    assert patched_moto() == []

    def transact_write_items(self: Any, transact_items: Any) -> None:
        raise AssertionError("never called")

    with monkeypatch.context() as patch:
        patch.setattr(DynamoDBBackend, "transact_write_items", transact_write_items)
        assert patched_moto() == [f"DynamoDBBackend.transact_write_items (from {__name__})"]
    assert patched_moto() == []


def test_the_ed25519_block_is_seen_inside_and_gone_after() -> None:
    with ed25519_kms():
        named = patched_moto()
    assert "KmsResponse.sign (from tests.integration.moto_ed25519)" in named
    assert "moto.kms.models.generate_private_key (from tests.integration.moto_ed25519)" in named
    assert patched_moto() == []
