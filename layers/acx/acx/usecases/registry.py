"""The service's public signing keys as an ``acx.trust-registry/1`` document (public keys only)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from acx.core.signing import PublicKey
from acx.usecases.deps import Deps

# The registry window of the signing key, from its KMS creation date: rotate the key before it ends.
KEY_VALIDITY_DAYS = 730


def trust_registry(deps: Deps) -> dict[str, Any]:
    key = PublicKey.from_der(deps.signer.public_key_der())
    publisher = deps.settings.publisher_id
    root = ".".join(reversed(publisher.split(".")))
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    created = getattr(deps.signer, "created_at", None)
    not_before = created.astimezone(dt.UTC) if isinstance(created, dt.datetime) else now
    return {
        "schemaVersion": "acx.trust-registry/1",
        "keys": [
            {
                "keyid": key.keyid,
                "publisherId": publisher,
                "algorithm": key.algorithm,
                "publicKeyPem": key.pem,
                "status": "active",
                "notBefore": _stamp(not_before),
                "notAfter": _stamp(not_before + dt.timedelta(days=KEY_VALIDITY_DAYS)),
                "namespaceProof": {
                    "method": "dns-txt",
                    "txtRecord": deps.settings.namespace_txt_record or f"_acx-challenge.{root}",
                    "verifiedAt": _stamp(now),
                },
            }
        ],
    }


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
