"""The service's public signing keys as an ``acx.trust-registry/1`` document (public keys only)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from acx.usecases.deps import Deps


def trust_registry(deps: Deps) -> dict[str, Any]:
    from acx.core.signing import PublicKey

    key = PublicKey.from_der(deps.signer.public_key_der())
    publisher = deps.settings.publisher_id
    root = ".".join(reversed(publisher.split(".")))
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    return {
        "schemaVersion": "acx.trust-registry/1",
        "keys": [
            {
                "keyid": key.keyid,
                "publisherId": publisher,
                "algorithm": key.algorithm,
                "publicKeyPem": key.pem,
                "status": "active",
                "notBefore": "2026-01-01T00:00:00Z",
                "notAfter": (now + dt.timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "namespaceProof": {
                    "method": "dns-txt",
                    "txtRecord": deps.settings.namespace_txt_record or f"_acx-challenge.{root}",
                    "verifiedAt": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
            }
        ],
    }
