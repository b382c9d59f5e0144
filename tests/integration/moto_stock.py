"""Whether moto in this process is moto as shipped, for the check each integration test file starts
and ends with (tests/integration/conftest.py).

A patch of moto's classes outlives the test that made it: left in place, it decides for every later
test on the worker what the production adapters run against. Patches made for one test and undone
after it (``monkeypatch``, tests/integration/moto_ed25519.py's block) pass; one left behind is named.
It looks at the classes the service's adapters go through (DynamoDB, KMS) and at their own
attributes only: a patch elsewhere in moto, or one that keeps moto's ``__module__``, is not seen.
"""

from __future__ import annotations

from typing import Any


def _owners() -> list[Any]:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler
    from moto.kms import models as kms_models
    from moto.kms.responses import KmsResponse

    return [
        DynamoDBBackend,
        DynamoHandler,
        Table,
        Item,
        DynamoType,
        kms_models.KmsBackend,
        kms_models.Key,
        KmsResponse,
    ]


def _module_of(value: Any) -> str | None:
    if isinstance(value, property):
        value = value.fget
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    return getattr(value, "__module__", None) if callable(value) else None


def patched_moto() -> list[str]:
    """``Class.attribute`` for every function on those classes (and ``kms.models.generate_private_key``)
    that moto did not define: empty when moto is as shipped."""
    from moto.kms import models as kms_models

    found = []
    for owner in _owners():
        for name, value in vars(owner).items():
            module = _module_of(value)
            if module is not None and not module.startswith("moto."):
                found.append(f"{owner.__name__}.{name} (from {module})")
    module = kms_models.generate_private_key.__module__
    if not module.startswith("moto."):
        found.append(f"moto.kms.models.generate_private_key (from {module})")
    return found
