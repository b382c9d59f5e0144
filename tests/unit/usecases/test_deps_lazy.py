"""``deps()`` builds no boto3 client and calls no AWS API: each client (and the KMS signer, whose
constructor calls DescribeKey) is made at its first use, once, whatever the threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from acx.usecases import deps as deps_module
from acx.usecases.deps import OnFirstUse, deps, reset


class _Built:
    def __init__(self, calls: list[str]) -> None:
        calls.append("built")
        self.value = 42

    def double(self) -> int:
        return self.value * 2


def test_on_first_use_builds_at_the_first_attribute_read_and_only_once() -> None:
    calls: list[str] = []
    lazy: Any = OnFirstUse(lambda: _Built(calls))
    assert calls == []
    assert lazy.value == 42 and lazy.double() == 84
    assert lazy.resolve() is lazy.resolve()
    assert calls == ["built"]


def test_on_first_use_builds_once_under_concurrent_first_reads() -> None:
    calls: list[str] = []

    def slow() -> _Built:
        time.sleep(0.05)
        return _Built(calls)

    lazy: Any = OnFirstUse(slow)
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(id(lazy.resolve()))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["built"] and len(set(seen)) == 1


def test_on_first_use_raises_the_builders_error_and_retries_next_time() -> None:
    attempts: list[int] = []

    def flaky() -> _Built:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("KMS busy")
        return _Built([])

    lazy: Any = OnFirstUse(flaky)
    with pytest.raises(RuntimeError, match="KMS busy"):
        _ = lazy.value
    assert lazy.value == 42 and len(attempts) == 2


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The services ``acx.adapters.aws.client`` creates a client for (no AWS is called)."""
    created: list[str] = []

    class FakeClient:
        def __init__(self, service: str) -> None:
            self.service = service

        def describe_key(self, **_: Any) -> dict[str, Any]:
            created.append("kms:DescribeKey")
            return {"KeyMetadata": {"KeySpec": "ECC_NIST_EDWARDS25519", "KeyUsage": "SIGN_VERIFY"}}

    def fake_client(service: str) -> FakeClient:
        created.append(service)
        return FakeClient(service)

    monkeypatch.setenv("FORGET_KEY_ID", "alias/acx-forget")
    monkeypatch.setattr(deps_module, "client", fake_client)
    reset()
    yield created
    reset()


def test_deps_makes_no_client_and_calls_nothing_until_used(made: list[str]) -> None:
    d = deps()
    assert made == []  # before: kms (twice: signer and tombstone key), s3, dynamodb; and DescribeKey
    assert d.data.s3.service == "s3"  # the data bucket's store reaches its client on first use
    assert made == ["s3"]
    assert d.uploads.s3.service == "s3" and made == ["s3"]  # one client per service, shared


def test_the_signer_calls_describe_key_only_when_a_route_uses_it(made: list[str]) -> None:
    d = deps()
    assert d.log is not None  # the log store holds the checkpoint signer; holding it calls nothing
    assert "kms" not in made
    assert d.signer.algorithm == "ed25519"
    assert made == ["kms", "kms:DescribeKey"]
    assert d.signer.signing_algorithm == "ED25519_SHA_512" and made.count("kms:DescribeKey") == 1
