"""Identifiers a caller sends, the limits docs/API.md promises, and the scopes (acx.contract).

Every value here is written out, not read from ``acx.contract``: a limit moved in the contract must
fail a test, since the docs, the CLI and other clients rely on the number.
"""

from __future__ import annotations

from typing import Any

import pytest

from acx import contract as c


@pytest.mark.parametrize("value", ["a", "0", "my-package", "a" * 64, "x-1-y"])
def test_package_ids_that_are_accepted(value: str) -> None:
    assert c.is_package_id(value)


@pytest.mark.parametrize(
    "value",
    ["", "-a", "--", ".", "..", "A", "a_b", "a.b", "a" * 65, "a\n", "a/b", None, 7, b"abc", ["a"]],
)
def test_package_ids_that_are_refused(value: Any) -> None:
    """An S3 key segment and a DynamoDB key part: no path segments, no option-like ``-``, no newline."""
    assert not c.is_package_id(value)


@pytest.mark.parametrize("value", ["t", "T", "Acme.Corp_1-x", "0" + "z" * 63])
def test_tenant_ids_that_are_accepted(value: str) -> None:
    assert c.is_tenant_id(value)


@pytest.mark.parametrize("value", ["", ".", "..", ".a", "-a", "_a", "a" * 65, "a\n", "a b", "a/b", None, 1])
def test_tenant_ids_that_are_refused(value: Any) -> None:
    assert not c.is_tenant_id(value)


def test_limits_are_the_documented_numbers() -> None:
    """docs/API.md: 5 MiB inline, 100 MiB presigned, Idempotency-Key 1-128, lock reason <= 256,
    recall limit 1-1000 (default 50); API Gateway's own payload limit is 10 MiB."""
    assert c.MAX_INLINE_BYTES == 5_242_880
    assert c.MAX_UPLOAD_BYTES == 104_857_600
    assert c.MAX_SMALL_BODY_BYTES == 65_536
    assert c.MAX_LOCK_BODY_BYTES == 4_096
    assert c.MAX_LOCK_REASON == 256
    assert c.MAX_IDEMPOTENCY_KEY == 128
    assert c.MAX_CURSOR == 2_048
    assert c.MAX_TAG == 128
    assert (c.RECALL_DEFAULT_LIMIT, c.RECALL_MAX_LIMIT) == (50, 1000)
    assert (c.LIST_DEFAULT_LIMIT, c.LIST_MAX_LIMIT, c.LOG_ENTRIES_MAX_LIMIT) == (50, 200, 1000)
    assert c.GATEWAY_MAX_PAYLOAD == 10_485_760
    assert c.RECORD_ID_MAX == 128
    exits = (c.EXIT_OK, c.EXIT_NOT_TRUSTED, c.EXIT_INVALID, c.EXIT_BLOCKED, c.EXIT_TAMPERED, c.EXIT_SERVER)
    assert exits == (0, 1, 2, 3, 4, 5)


def test_the_scopes_are_the_seven_named_ones() -> None:
    named = ("memory:write", "memory:read", "memory:forget", "cartridge:export", "log:read", "admin")
    assert c.SCOPES == (*named, "memory:review")  # review: deciding candidates (docs/MEMORY-MODEL.md)
