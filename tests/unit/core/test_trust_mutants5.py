"""The log-checkpoint inclusion check reads every proof in the list: one entry without a memoryId is
reported, and the proofs after it are still checked against their memory rows.
"""

from __future__ import annotations

import json
from pathlib import Path

from acx.core import canonical
from acx.core.signing import LocalEd25519Signer
from acx.core.trust import evaluate
from tests.unit.core.test_trust import _attestation, build, registry_for


def test_a_proof_without_a_memory_id_does_not_hide_the_proofs_after_it(tmp_path: Path) -> None:
    signer, log_signer = LocalEd25519Signer(), LocalEd25519Signer()
    doc = json.loads(_attestation(7, [0, 1, 2, 3], log_signer))
    doc["proofs"].insert(0, {"index": 0})
    path = tmp_path / "a.acx"
    build(path, signer, canonical.dumps(doc))
    v = evaluate(path, registry_for(signer))
    assert v.verdict == "tampered"
    assert v.inclusion["checked"] == 4 and v.inclusion["failed"] == 0
    assert any("missing or duplicate memoryId" in r for r in v.reasons)
