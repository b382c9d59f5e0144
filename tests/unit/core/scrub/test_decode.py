"""Encoded secrets (acx.core.scrub.decode): base64 (standard, URL-safe, unpadded) and hex runs are
decoded one level and judged like plain text; the finding names the encoded run, never the value.

Planted tokens are fake, format-valid, built at run time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid

import pytest

from acx.core.scrub import engine, scan_any, scan_bundle, scan_text
from tests.unit.core.scrub.conftest import MIB, assert_costs_a_few_clean_megabytes, repeated_mib

GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AKIA = "AKIA" + "Q7X3M2N4B5V6C7Z8"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
TOKENS = {"github-pat": GHP, "aws-access-key-id": AKIA, "stripe-access-token": STRIPE}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def hexed(text: str) -> str:
    return binascii.hexlify(text.encode()).decode()


def _blocks(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text) if f.severity == "block"]


@pytest.mark.parametrize("rule", sorted(TOKENS))
@pytest.mark.parametrize(
    ("kind", "encode"), [("base64", b64), ("base64", b64url), ("hex", hexed)], ids=["std", "urlsafe", "hex"]
)
def test_a_token_written_encoded_in_prose_is_found_by_its_own_rule(rule: str, kind: str, encode) -> None:  # type: ignore[no-untyped-def]
    encoded = encode(TOKENS[rule])
    text = f"the blob I pasted was {encoded} yesterday"
    assert _blocks(text) == [(f"{kind}:{rule}", text.index(encoded))]


@pytest.mark.parametrize(
    "template",
    [
        "apiVersion: v1\nkind: Secret\ndata:\n  token: {b64}\n",  # a Kubernetes Secret
        "Authorization: Basic {basic}",  # a basic-auth header: user:token
        "config blob: {blob}",  # a pasted config file
        '{{"data": "{b64}"}}',
        "TOKEN={b64}",
    ],
)
@pytest.mark.parametrize("token", sorted(TOKENS.values()), ids=sorted(TOKENS))
def test_encoded_tokens_in_the_places_they_leak_block(template: str, token: str) -> None:
    text = template.format(
        b64=b64(token), basic=b64(f"x-access-token:{token}"), blob=b64(f"url: https://x\napi: {token}\n")
    )
    assert scan_any(text).blocked, template


def test_the_report_names_the_run_and_never_the_decoded_value() -> None:
    encoded = b64(GHP)
    record = {"id": "r1", "summary": f"pasted {encoded} here"}
    report = scan_bundle([record])
    assert [(f.rule, f.location, f.path, f.offset) for f in report.findings] == [
        ("base64:github-pat", "record:r1", "$.summary", len("pasted "))
    ]
    dumped = json.dumps(report.to_dict())
    for piece in (GHP, GHP[4:12], encoded, encoded[:12]):
        assert piece not in dumped


@pytest.mark.parametrize(
    "text",
    [
        f"echo {b64('retry the deploy with backoff and jitter')} | base64 -d",  # base64 of prose
        f"jwt header {b64url(json.dumps({'alg': 'HS256', 'typ': 'JWT'}))}",
        "a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,1024",  # a wheel RECORD line
        f"commit {hashlib.sha1(b'x', usedforsecurity=False).hexdigest()}",  # hex of binary: a digest
        f"image digest sha256:{hashlib.sha256(b'x').hexdigest()}",
        f"request {uuid.UUID(int=7)} served",
        f'"integrity": "sha512-{base64.b64encode(hashlib.sha512(b"x").digest()).decode()}"',  # a lockfile
        f"{hexed('plain words in hex are only words, nothing else')}",
        "test_the_standards_poisoned_package_is_refused_at_export",  # an identifier, not base64
    ],
)
def test_encodings_of_ordinary_things_pass(text: str) -> None:
    assert not scan_any(text).blocked, text


def test_decoding_is_one_level() -> None:
    """Base64 of base64 of a token is not decoded twice (docs/SCRUB.md lists it as not stopped)."""
    assert not _blocks(f"pasted {b64(b64(GHP))} here")


HOSTILE = {
    "base64 tokens": repeated_mib(b64(GHP) + " "),
    "hex tokens": repeated_mib(hexed(GHP) + " "),
    "one base64 text run": base64.b64encode(("key=" * 40 + " retry ").encode() * (MIB // 150))[:MIB],
    "base64 of prose": repeated_mib(b64("retry the deploy with backoff and jitter please") + " "),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_encoded_megabyte_costs_a_few_times_a_clean_one(name: str) -> None:
    assert_costs_a_few_clean_megabytes(name, HOSTILE[name])
    assert engine.scan_bytes(HOSTILE[name])  # refused or blocked, never passed unjudged
