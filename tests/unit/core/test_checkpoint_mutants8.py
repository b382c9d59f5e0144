"""Checkpoint parsing the seventh round's fresh draw (seed 27) found unguarded: a root of the wrong
length is refused as such, before the extension lines are looked at."""

from __future__ import annotations

import base64

import pytest

from acx.core import checkpoint as ck
from acx.core.signing import LocalEd25519Signer
from tests.unit.core.test_checkpoint_guards import HEAD, ROOT, _note

SIGNER = LocalEd25519Signer()


@pytest.mark.parametrize("root", [ROOT[:31], ROOT + b"\x00", ROOT[:1]])
@pytest.mark.parametrize("ext", ["", f"chain-head {HEAD[:-1]}\n", f"chain-head {HEAD}\nchain-head {HEAD}\n"])
def test_a_wrong_length_root_is_the_reason_even_with_a_bad_chain_head_line(root: bytes, ext: str) -> None:
    """The body is checked line by line: a 31-, 33- or 1-byte root is refused for its length, even
    when the chain-head extension that follows is missing, short or doubled."""
    body = f"o/t/p\n1\n{base64.b64encode(root).decode()}\n{ext}"
    with pytest.raises(ck.CheckpointError, match="root must be 32 bytes"):
        ck.parse_checkpoint(_note(body, SIGNER))
