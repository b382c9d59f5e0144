"""The API client against a tiny in-process fake of the HTTP API (no moto, no handlers)."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from acx.cli import client, client_log, client_upload
from acx.cli.main import main
from tests.http import answer_json

Route = Callable[["Req"], tuple[int, Any]]


class Req:
    def __init__(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> None:
        self.method, self.path, self.query, self.headers, self.body = method, path, query, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


class FakeApi:
    """Routes keyed by "METHOD /path"; records every request; answers JSON (or raw bytes)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Req] = []
        fake = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _do(self) -> None:
                parts = urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                req = Req(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    dict(self.headers.items()),
                    self.rfile.read(n) if n else b"",
                )
                fake.requests.append(req)
                route = fake.routes.get(f"{self.command} {parts.path}")
                status, body = route(req) if route else (404, {"message": "Not Found"})
                answer_json(self, status, body)

            do_GET = do_POST = do_PUT = do_DELETE = _do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def on(self, key: str, fn: Route | tuple[int, Any]) -> None:
        self.routes[key] = fn if callable(fn) else (lambda _r, v=fn: v)

    def last(self, key: str) -> Req:
        method, path = key.split(" ", 1)
        return [r for r in self.requests if r.method == method and r.path == path][-1]


@pytest.fixture()
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    monkeypatch.setenv("ACX_CONFIG", str(tmp_path / "cfg" / "config.json"))
    monkeypatch.delenv("ACX_ENDPOINT", raising=False)
    monkeypatch.delenv("ACX_TOKEN", raising=False)
    fake = FakeApi()
    fake.on("POST /local/token", lambda r: (200, {"token": f"tok-{r.json()['tenant']}", "expiresAt": "x"}))
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def login(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["login", "--local", "--endpoint", api.url, "--tenant", "acme"]) == 0
    capsys.readouterr()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_login_local_stores_token_privately(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "login",
            "--local",
            "--endpoint",
            api.url + "/",
            "--tenant",
            "acme",
            "--scopes",
            "memory:read",
            "--print-token",
        ],
        capsys,
    )
    assert code == 0
    assert out.strip().splitlines()[-1] == "tok-acme"
    assert api.last("POST /local/token").json() == {"tenant": "acme", "scopes": ["memory:read"]}
    path = Path(os.environ["ACX_CONFIG"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cfg = json.loads(path.read_text())
    assert cfg["endpoint"] == api.url and cfg["token"] == "tok-acme"


def test_login_with_token_for_real_deployments(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["login", "--endpoint", "https://api.example", "--token", "T0K"], capsys)[0] == 0
    assert client.load_config()["token"] == "T0K"
    assert api.requests == []  # no call needed
    assert run(["login", "--endpoint", "https://api.example"], capsys)[0] == 2


def test_commands_need_login(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["recall", "--package", "p"], capsys)
    assert code == 2 and "not logged in" in err


def test_inline_upload_sends_bundle_with_token_and_key(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    login(api, capsys)
    api.on(
        "POST /v1/packages/pk/bundles",
        (201, {"accepted": 2, "merged": 1, "unchanged": 0, "refused": 0, "log": {"fromSeq": 0, "toSeq": 2}}),
    )
    bundle = tmp_path / "b.json"
    bundle.write_bytes(b'{"records": []}')
    code, out, _ = run(
        ["upload", str(bundle), "--package", "pk", "--idempotency-key", "k1", "--json"], capsys
    )
    assert code == 0 and json.loads(out)["accepted"] == 2
    req = api.last("POST /v1/packages/pk/bundles")
    assert req.body == b'{"records": []}'
    assert req.headers["Authorization"] == "Bearer tok-acme"
    assert req.headers["Idempotency-Key"] == "k1"
    code, out, _ = run(["upload", str(bundle), "--package", "pk"], capsys)
    assert "accepted 2, merged 1" in out and "log seq 0..2" in out


def test_blocked_upload_exits_3_with_report(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    login(api, capsys)
    api.on(
        "POST /v1/packages/pk/bundles",
        (
            422,
            {
                "error": {"code": "blocked", "message": "secret found", "path": "$.records[0].summary"},
                "report": {
                    "findings": [{"recordId": "m1", "path": "$.summary", "offset": 16, "rule": "aws-key"}]
                },
            },
        ),
    )
    bundle = tmp_path / "b.json"
    bundle.write_text("{}")
    code, out, err = run(["upload", str(bundle), "--package", "pk"], capsys)
    assert code == 3
    assert "error 422 blocked: secret found (at $.records[0].summary)" in err
    assert "aws-key" in err and "offset 16" in err
    code, out, err = run(["upload", str(bundle), "--package", "pk", "--json"], capsys)
    assert code == 3 and json.loads(out)["error"]["code"] == "blocked"


@pytest.mark.parametrize(
    ("status", "body", "exit_code", "line"),
    [
        (
            409,
            {"error": {"code": "forgotten", "message": "content was forgotten"}},
            2,
            "error 409 forgotten: content was forgotten (at /v1/packages/pk/bundles)",
        ),
        (401, {"message": "Unauthorized"}, 2, "error 401 unauthorized: Unauthorized"),
        (
            422,
            {"error": {"code": "invalid", "message": "bad", "path": "$.records[3].portable"}},
            2,
            "error 422 invalid: bad (at $.records[3].portable)",
        ),
        (503, {"error": {"code": "unavailable", "message": "busy"}}, 5, "error 503 unavailable: busy"),
        (500, b"<html>", 5, "error 500 error: HTTP 500"),
    ],
)
def test_http_errors_map_to_exit_codes(
    api: FakeApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    status: int,
    body: Any,
    exit_code: int,
    line: str,
) -> None:
    login(api, capsys)
    api.on("POST /v1/packages/pk/bundles", (status, body))
    bundle = tmp_path / "b.json"
    bundle.write_text("{}")
    code, _, err = run(["upload", str(bundle), "--package", "pk"], capsys)
    assert code == exit_code
    assert line in err


def test_network_error_exits_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACX_CONFIG", str(tmp_path / "c.json"))
    client.save_config({"endpoint": "http://127.0.0.1:9", "token": "t"})
    code, _, err = run(["recall", "--package", "p"], capsys)
    assert code == 5 and "cannot reach" in err


def test_large_upload_goes_presigned_and_waits(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    login(api, capsys)
    monkeypatch.setattr(client_upload, "INLINE_LIMIT", 1000)
    stored: dict[str, Any] = {}
    polls = {"n": 0}

    def put(r: Req) -> tuple[int, Any]:
        stored["body"], stored["headers"] = r.body, r.headers
        return 200, b""

    def status(_r: Req) -> tuple[int, Any]:
        polls["n"] += 1
        if polls["n"] < 2:
            return 200, {"uploadId": "u" * 32, "status": "pending"}
        return 200, {"uploadId": "u" * 32, "status": "ingested", "summary": {"accepted": 5}}

    api.on(
        "POST /v1/packages/pk/uploads",
        lambda r: (
            201,
            {
                "uploadId": "u" * 32,
                "url": api.url + "/s3/put?X-Amz-Signature=abc",
                "method": "PUT",
                "headers": {"Content-Type": "application/json"},
                "expiresIn": 900,
                "maxBytes": 10**9,
            },
        ),
    )
    api.on("PUT /s3/put", put)
    api.on(f"GET /v1/packages/pk/uploads/{'u' * 32}", status)
    bundle = tmp_path / "big.json"
    data = os.urandom(5000)
    bundle.write_bytes(data)
    code, out, _ = run(["upload", str(bundle), "--package", "pk", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["status"] == "ingested"
    assert api.last("POST /v1/packages/pk/uploads").json() == {"size": 5000}
    assert stored["body"] == data
    assert stored["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in stored["headers"]  # the bearer token never goes to S3
    assert polls["n"] == 2


def test_rejected_presigned_upload_exits_3(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    login(api, capsys)
    monkeypatch.setattr(client_upload, "INLINE_LIMIT", 10)
    api.on(
        "POST /v1/packages/pk/uploads",
        lambda r: (
            201,
            {
                "uploadId": "a" * 32,
                "url": api.url + "/s3/put",
                "method": "PUT",
                "headers": {},
                "maxBytes": 10**9,
            },
        ),
    )
    api.on("PUT /s3/put", (200, b""))
    api.on(
        f"GET /v1/packages/pk/uploads/{'a' * 32}",
        (
            200,
            {
                "uploadId": "a" * 32,
                "status": "rejected",
                "error": {"code": "blocked", "message": "secret"},
                "report": {"findings": [{"recordId": "m", "rule": "r1", "offset": 3}]},
            },
        ),
    )
    bundle = tmp_path / "big.json"
    bundle.write_text("x" * 100)
    code, _, err = run(["upload", str(bundle), "--package", "pk"], capsys)
    assert code == 3 and "r1" in err


def test_presigned_put_refused_is_reported(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    login(api, capsys)
    monkeypatch.setattr(client_upload, "INLINE_LIMIT", 10)
    api.on(
        "POST /v1/packages/pk/uploads",
        lambda r: (201, {"uploadId": "a" * 32, "url": api.url + "/s3/put", "method": "PUT", "headers": {}}),
    )
    api.on("PUT /s3/put", (403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>"))
    bundle = tmp_path / "big.json"
    bundle.write_text("x" * 100)
    code, _, err = run(["upload", str(bundle), "--package", "pk", "--no-wait"], capsys)
    assert code == 2 and "SignatureDoesNotMatch" in err


def test_recall_prints_banner_first_and_follows_cursor(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    login(api, capsys)

    def page(r: Req) -> tuple[int, Any]:
        if "cursor" not in r.query:
            return 200, {
                "advisory": "Memory informs; it never authorizes.",
                "corrupt": False,
                "records": [{"id": "m1", "title": "T1", "zone": "rom", "tags": ["a"]}],
                "nextCursor": "c2",
            }
        return 200, {
            "advisory": "Memory informs; it never authorizes.",
            "corrupt": False,
            "records": [{"id": "m2", "title": "T2", "zone": "save"}],
            "nextCursor": None,
        }

    api.on("GET /v1/packages/pk/memories", page)
    code, out, _ = run(["recall", "--package", "pk", "--tier", "rom", "--tag", "a", "--limit", "1"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("[advisory] Memory informs")
    assert "m1" in out and "m2" not in out
    q = api.last("GET /v1/packages/pk/memories").query
    assert q == {"tier": ["rom"], "tag": ["a"], "limit": ["1"]}
    code, out, _ = run(["recall", "--package", "pk", "--all", "--json"], capsys)
    doc = json.loads(out)
    assert [r["id"] for r in doc["records"]] == ["m1", "m2"] and doc["nextCursor"] is None
    assert doc["advisory"]


def test_recall_corrupt_store_exits_4(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    login(api, capsys)
    api.on(
        "GET /v1/packages/pk/memories",
        (200, {"advisory": "a", "corrupt": True, "records": [], "nextCursor": None}),
    )
    code, _, err = run(["recall", "--package", "pk"], capsys)
    assert code == 4 and "corrupt" in err


def test_forget_by_id_and_by_hash(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    login(api, capsys)
    api.on(
        "DELETE /v1/packages/pk/memories/mem%2F1",
        (200, {"forgotten": ["mem/1"], "log": {"fromSeq": 3, "toSeq": 3}, "revokedCartridges": ["c1"]}),
    )
    api.on("DELETE /v1/packages/pk/memories", (200, {"forgotten": ["x"], "log": {}}))
    code, out, _ = run(["forget", "mem/1", "--package", "pk"], capsys)
    assert code == 0 and "revoked cartridges: c1" in out
    assert api.requests[-1].path == "/v1/packages/pk/memories/mem%2F1"
    code, out, _ = run(["forget", "--content-hash", "ab" * 32, "--package", "pk", "--json"], capsys)
    assert code == 0 and api.last("DELETE /v1/packages/pk/memories").query == {"contentHash": ["ab" * 32]}
    assert run(["forget", "--package", "pk"], capsys)[0] == 2
    assert run(["forget", "x", "--content-hash", "y", "--package", "pk"], capsys)[0] == 2


def test_export_wait_and_download(api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    login(api, capsys)
    cid = "c" * 32
    calls = {"n": 0}

    def get(_r: Req) -> tuple[int, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            return 200, {"cartridgeId": cid, "status": "pending"}
        return 200, {
            "cartridgeId": cid,
            "status": "ready",
            "url": api.url + "/s3/cart",
            "manifestHash": "sha256:1",
        }

    api.on("POST /v1/packages/pk/cartridges", (202, {"cartridgeId": cid, "status": "pending"}))
    api.on(f"GET /v1/packages/pk/cartridges/{cid}", get)
    api.on("GET /s3/cart", (200, b"SQLite format 3\x00..."))
    code, out, _ = run(["export", "--package", "pk", "--include-field-learned", "--wait", "--json"], capsys)
    assert code == 0 and json.loads(out)["status"] == "ready"
    assert api.last("POST /v1/packages/pk/cartridges").json() == {"includeFieldLearned": True}
    dest = tmp_path / "out.acx"
    code, out, _ = run(["download", cid, "--package", "pk", "-o", str(dest)], capsys)
    assert code == 0 and dest.read_bytes() == b"SQLite format 3\x00..."
    assert "Authorization" not in api.last("GET /s3/cart").headers
    assert not (tmp_path / "out.acx.part").exists()


def test_download_revoked_is_an_error(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    login(api, capsys)
    cid = "d" * 32
    api.on(
        f"GET /v1/packages/pk/cartridges/{cid}", (410, {"error": {"code": "revoked", "message": "revoked"}})
    )
    code, _, err = run(["download", cid, "--package", "pk", "-o", str(tmp_path / "x.acx")], capsys)
    assert code == 2 and "error 410 revoked" in err and not (tmp_path / "x.acx").exists()


# -- log: a real signed checkpoint and real proofs from acx.core, served by the fake


def _signer(start: int = 0) -> Any:
    """A deterministic Ed25519 signer whose verifier key has no '+' inside its base64 part.

    acx.core.checkpoint.parse_verifier_key splits on every '+', so keys whose base64 contains one are
    rejected (reported to the lead); these tests are about the client, so they avoid such keys.
    """
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from acx.core import checkpoint as cpm
    from acx.core.signing import LocalEd25519Signer

    for seed in range(start, start + 1000):
        signer = LocalEd25519Signer(ed25519.Ed25519PrivateKey.from_private_bytes(seed.to_bytes(32, "big")))
        if cpm.verifier_key_for("acx.local", signer).count("+") == 2:
            return signer
    raise AssertionError("no suitable key")


def _log_fixture(api: FakeApi, n: int, *, tamper_proof: bool = False) -> dict[str, Any]:
    from acx.core import checkpoint as cpm
    from acx.core import merkle

    leaves = [merkle.leaf_hash(f"entry-{i}".encode()) for i in range(n)]
    get = merkle.from_leaves(leaves)
    root = merkle.root_of_leaf_hashes(leaves)
    signer = _signer()
    text = cpm.sign_checkpoint(cpm.Checkpoint("acx.local/acme/pk", n, root, "0" * 64), "acx.local", signer)
    vkey = cpm.verifier_key_for("acx.local", signer)
    api.on("GET /v1/packages/pk/log", (200, {"size": n, "checkpoint": text, "verifierKey": vkey}))
    api.on("GET /v1/packages/pk/log/verify", (200, {"status": "ok", "size": n}))

    def inclusion(r: Req) -> tuple[int, Any]:
        i, s = int(r.query["index"][0]), int(r.query["size"][0])
        proof = merkle.inclusion_proof(i, s, get)
        if tamper_proof:
            proof = [bytes(32), *proof[1:]]
        return 200, {"index": i, "size": s, "leafHash": leaves[i].hex(), "proof": [p.hex() for p in proof]}

    def consistency(r: Req) -> tuple[int, Any]:
        m, k = int(r.query["from"][0]), int(r.query["to"][0])
        return 200, {"from": m, "to": k, "proof": [p.hex() for p in merkle.consistency_proof(m, k, get)]}

    api.on("GET /v1/packages/pk/log/proof/inclusion", inclusion)
    api.on("GET /v1/packages/pk/log/proof/consistency", consistency)
    return {"text": text, "vkey": vkey, "root": root}


def test_log_show_writes_checkpoint_and_vkey(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("acx.core.checkpoint")
    login(api, capsys)
    fx = _log_fixture(api, 5)
    cp, vk = tmp_path / "cp", tmp_path / "vk"
    code, out, _ = run(
        ["log", "show", "--package", "pk", "--out-checkpoint", str(cp), "--out-vkey", str(vk)], capsys
    )
    assert code == 0 and "log size 5" in out
    assert cp.read_text() == fx["text"] and vk.read_text().strip() == fx["vkey"]


def test_log_verify_checks_signature_and_proofs_and_remembers(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("acx.core.checkpoint")
    login(api, capsys)
    _log_fixture(api, 5)
    code, out, _ = run(["log", "verify", "--package", "pk", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "ok"
    assert doc["client"]["checkpointSignature"] == "ok" and doc["client"]["inclusion"] == "ok"
    # the log grows: consistency from the remembered size 5 must be proven
    _log_fixture(api, 9)
    code, out, _ = run(["log", "verify", "--package", "pk", "--json"], capsys)
    assert code == 0 and json.loads(out)["client"]["consistency"] == "ok (from size 5)"
    assert api.last("GET /v1/packages/pk/log/proof/consistency").query == {"from": ["5"], "to": ["9"]}


def test_log_verify_detects_rewritten_history(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("acx.core.checkpoint")
    login(api, capsys)
    _log_fixture(api, 4)
    assert run(["log", "verify", "--package", "pk"], capsys)[0] == 0
    # a different log of size 6 (new key, new leaves): consistency from the remembered root fails
    from acx.core import checkpoint as cpm
    from acx.core import merkle

    leaves = [merkle.leaf_hash(f"forged-{i}".encode()) for i in range(6)]
    get = merkle.from_leaves(leaves)
    signer = _signer(1000)
    text = cpm.sign_checkpoint(
        cpm.Checkpoint("acx.local/acme/pk", 6, merkle.root_of_leaf_hashes(leaves), "0" * 64),
        "acx.local",
        signer,
    )
    api.on(
        "GET /v1/packages/pk/log",
        (200, {"size": 6, "checkpoint": text, "verifierKey": cpm.verifier_key_for("acx.local", signer)}),
    )
    api.on(
        "GET /v1/packages/pk/log/proof/inclusion",
        lambda r: (
            200,
            {"leafHash": leaves[5].hex(), "proof": [p.hex() for p in merkle.inclusion_proof(5, 6, get)]},
        ),
    )
    api.on(
        "GET /v1/packages/pk/log/proof/consistency",
        lambda r: (200, {"proof": [p.hex() for p in merkle.consistency_proof(4, 6, get)]}),
    )
    code, out, err = run(["log", "verify", "--package", "pk"], capsys)
    assert code == 4 and "local consistency: failed" in out and "verification failed" in err


def test_log_verify_bad_signature_or_proof_exits_4(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("acx.core.checkpoint")
    login(api, capsys)
    fx = _log_fixture(api, 5, tamper_proof=True)
    code, out, _ = run(["log", "verify", "--package", "pk", "--json"], capsys)
    assert code == 4 and json.loads(out)["client"]["inclusion"] == "failed"
    _log_fixture(api, 5)
    from acx.core import checkpoint as cpm

    other = cpm.verifier_key_for("acx.local", _signer(2000))
    api.on("GET /v1/packages/pk/log", (200, {"size": 5, "checkpoint": fx["text"], "verifierKey": other}))
    code, out, _ = run(["log", "verify", "--package", "pk", "--json"], capsys)
    assert code == 4 and json.loads(out)["client"]["checkpointSignature"] == "failed"


def test_log_verify_server_failure_exits_4(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    login(api, capsys)
    api.on("GET /v1/packages/pk/log/verify", (200, {"status": "tampered", "problems": ["seq 3 hash"]}))
    code, out, _ = run(["log", "verify", "--package", "pk", "--no-local"], capsys)
    assert code == 4 and "tampered" in out


def test_hash_decoding_accepts_hex_and_base64() -> None:
    raw = bytes(range(32))
    assert client_log._b(raw.hex()) == raw
    assert client_log._b(base64.b64encode(raw).decode()) == raw


def test_module_import_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, acx.cli.client, acx.cli.client_session, acx.cli.client_upload, "
        "acx.cli.client_memories, acx.cli.client_cartridges, acx.cli.client_log; "
        "bad = [m for m in ('boto3', 'pydantic', 'botocore', 'jwt') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
