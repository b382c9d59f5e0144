"""The per-deployment secret that keys every tombstone hash, derived from a KMS HMAC key.

The KMS key (``HMAC_256``, ``GENERATE_VERIFY_MAC``) never leaves KMS; the function derives a working
key once per process as ``GenerateMac(key, "acx-forget-key/v1")`` and keeps it in memory only (never
stored, logged or echoed). One KMS call per cold start, not per record: the sketch needs a keyed hash
per word pair, far too many calls for KMS. What it does NOT stop: code running inside the functions
(or anyone allowed ``kms:GenerateMac`` on the key) can derive the key and confirm guesses.
"""

from __future__ import annotations

from typing import Any

DERIVATION_MESSAGE = b"acx-forget-key/v1"


class KmsMacKeyer:
    def __init__(self, kms_client: Any, key_id: str) -> None:
        self.kms = kms_client
        self.key_id = key_id
        self._key: bytes | None = None

    def key(self) -> bytes:
        if self._key is None:
            resp = self.kms.generate_mac(
                KeyId=self.key_id, Message=DERIVATION_MESSAGE, MacAlgorithm="HMAC_SHA_256"
            )
            self._key = bytes(resp["Mac"])
        return self._key
