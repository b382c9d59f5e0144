"""The local stack keeps its data and keys: `python -m acx.local.serve --data DIR`, stopped cleanly or
killed with SIGKILL at several points, comes back with every acknowledged write, the same log and
checkpoints, the same signing key id and trust registry, and the dev tokens it issued still valid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.common import bundle_bytes, generate_records

pytestmark = pytest.mark.e2e


class Serve:
    """One ``python -m acx.local.serve`` process on a data directory."""

    def __init__(self, data: Path, log: Path) -> None:
        self.data = data
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def start(self, timeout: float = 120) -> Serve:
        t0 = time.monotonic()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "ACX_LOCAL_DATA"):
            env.pop(key, None)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "acx.local.serve",
                "--port",
                "0",
                "--data",
                str(self.data),
                "--verify-interval",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=self.log.open("a"),
            text=True,
            env=env,
        )
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"serve exited early: {self.log.read_text()[-2000:]}")
            if line.strip().startswith("API endpoint"):
                self.endpoint = line.split()[-1]
                print(f"[restart] serve up in {time.monotonic() - t0:.1f}s", file=sys.stderr)
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # keep the pipe drained
                return self
        raise AssertionError("serve did not print its endpoint in time")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0

    def call(
        self, method: str, path: str, token: str | None = None, body: bytes | None = None
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.endpoint + path, data=body, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 - local endpoint
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, json.loads(raw) if raw else None


@pytest.fixture()
def serve(tmp_path: Path) -> Iterator[Any]:
    started: list[Serve] = []

    def make() -> Serve:
        s = Serve(tmp_path / "data", tmp_path / "serve.log").start()
        started.append(s)
        return s

    yield make
    for s in started:
        if s.proc is not None and s.proc.poll() is None:
            s.kill()


def _survivors(records: list[dict[str, Any]]) -> set[str]:
    """Ids that outlive the merge: the generator's ``alt-`` copies fold into the smaller original id."""
    return {r["id"] for r in records if "alt-" not in r["id"]}


def _ids(s: Serve, token: str, package: str) -> set[str]:
    ids: set[str] = set()
    cursor = ""
    while True:
        status, doc = s.call("GET", f"/v1/packages/{package}/memories?limit=200{cursor}", token)
        assert status == 200, doc
        ids.update(r["id"] for r in doc["records"])
        if not doc.get("nextCursor"):
            return ids
        cursor = f"&cursor={doc['nextCursor']}"


def _state(s: Serve, token: str, package: str) -> dict[str, Any]:
    status, log = s.call("GET", f"/v1/packages/{package}/log", token)
    assert status == 200, log
    status, verdict = s.call("GET", f"/v1/packages/{package}/log/verify", token)
    assert status == 200 and verdict["status"] == "ok", verdict
    _, registry = s.call("GET", "/v1/trust-registry")
    keys = [{k: v for k, v in key.items() if k != "namespaceProof"} for key in registry["keys"]]
    return {"log": log, "keys": keys}


def _token(s: Serve, tenant: str) -> str:
    status, doc = s.call("POST", "/local/token", body=json.dumps({"tenant": tenant}).encode())
    assert status == 200, doc
    return str(doc["token"])


def test_acknowledged_writes_logs_keys_and_tokens_survive_kill_and_stop(serve: Any, tmp_path: Path) -> None:
    s = serve()
    token = _token(s, "rs")
    acked: set[str] = set()
    # Kill point 1: straight after a 201.
    records = generate_records(40, seed=7, prefix="inline")
    status, doc = s.call("POST", "/v1/packages/p/bundles", token, bundle_bytes(records))
    assert status == 201, doc
    acked |= _survivors(records)
    before = _state(s, token, "p")
    s.kill()

    s = serve()
    assert _state(s, token, "p") == before  # same log size, checkpoint, key id and registry; token valid
    assert acked <= _ids(s, token, "p")
    # Kill point 2: in the middle of a presigned ingest (the log has started growing).
    bulk = generate_records(600, seed=8, prefix="bulk")
    status, up = s.call("POST", "/v1/packages/p/uploads", token, b"{}")
    assert status == 201, up
    put = urllib.request.Request(up["url"], data=bundle_bytes(bulk), method="PUT", headers=up["headers"])  # noqa: S310
    with urllib.request.urlopen(put, timeout=120) as resp:  # noqa: S310
        assert resp.status == 200
    size0 = before["log"]["size"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, log = s.call("GET", "/v1/packages/p/log", token)
        if status == 200 and log["size"] > size0:
            break
        time.sleep(0.05)
    s.kill()

    # Kill point 3: at arbitrary moments of a stream of acknowledged writes.
    s = serve()
    stop = threading.Event()

    def writer(seed: int) -> None:
        i = 0
        while not stop.is_set():
            batch = generate_records(5, seed=seed * 1000 + i, prefix=f"w{seed}-{i}")
            try:
                code, _ = s.call("POST", "/v1/packages/q/bundles", token, bundle_bytes(batch))
            except OSError:
                return  # the stack died mid-request: not acknowledged
            if code == 201:
                acked_q.update(_survivors(batch))
            i += 1

    acked_q: set[str] = set()
    t = threading.Thread(target=writer, args=(1,))
    t.start()
    deadline = time.monotonic() + 60
    while not acked_q and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.7)  # then at whatever point the next writes are
    s.kill()
    stop.set()
    t.join(30)
    assert acked_q, "no write was acknowledged before the kill"

    s = serve()
    # The pending upload resumes: ingested, and the log verifies.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status, job = s.call("GET", f"/v1/packages/p/uploads/{up['uploadId']}", token)
        assert status == 200, job
        if job["status"] != "pending":
            break
        time.sleep(0.25)
    assert job["status"] == "ingested", job
    ids_p = _ids(s, token, "p")
    assert acked <= ids_p
    assert len(ids_p) >= len(acked) + job["summary"]["accepted"]
    assert acked_q <= _ids(s, token, "q")
    after_ingest = {pkg: _state(s, token, pkg) for pkg in ("p", "q")}
    assert after_ingest["p"]["keys"] == before["keys"]
    s.stop()  # clean stop

    s = serve()
    assert {pkg: _state(s, token, pkg) for pkg in ("p", "q")} == after_ingest
    s.stop()


def test_reset_empties_everything(serve: Any, tmp_path: Path) -> None:
    s = serve()
    token = _token(s, "rz")
    status, _ = s.call("POST", "/v1/packages/z/bundles", token, bundle_bytes(generate_records(3, seed=9)))
    assert status == 201
    keys = _state(s, token, "z")["keys"]
    s.stop()
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir()) == [
        "issuer-key.pem",
        "kms-keys.json",
        "lock",
        "moto.snapshot.1",  # the clean stop compacted the journal into a snapshot
        "stack.json",
    ]
    private = ("issuer-key.pem", "kms-keys.json", "moto.snapshot.1")
    assert all((data / n).stat().st_mode & 0o077 == 0 for n in private)
    out = subprocess.run(
        [sys.executable, "-m", "acx.local.serve", "--reset", "--data", str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "emptied" in out.stdout
    assert not data.exists()
    s = serve()
    assert s.call("GET", "/v1/packages/z/log", token)[0] == 401  # the old issuer key is gone
    fresh = _token(s, "rz")
    status, doc = s.call("GET", "/v1/packages/z/memories", fresh)
    assert status == 404 or (status == 200 and doc["records"] == []), doc
    _, registry = s.call("GET", "/v1/trust-registry")
    assert registry["keys"][0]["keyid"] != keys[0]["keyid"]
    s.stop()


def test_reset_refuses_a_directory_that_is_not_a_data_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    out = subprocess.run(
        [sys.executable, "-m", "acx.local.serve", "--reset", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "not an acx local data directory" in out.stderr
    assert (tmp_path / "notes.txt").exists()


def test_replay_gives_the_same_object_versions_so_a_purged_version_stays_purged(tmp_path: Path) -> None:
    """forget deletes old S3 versions by id: a replay that minted other version ids would bring
    forgotten plaintext back. The journal replays each request with the seed it ran with."""
    from acx.local.stack import LocalStack

    data = tmp_path / "data"
    kw: dict[str, Any] = {
        "port": 0,
        "quiet": True,
        "verify_interval": None,
        "isolated_moto": True,
        "data_dir": data,
    }

    def versions(stack: Any) -> list[tuple[str, str]]:
        s3 = stack.client("s3")
        doc = s3.list_object_versions(Bucket=stack.env["DATA_BUCKET"], Prefix="probe/")
        return sorted((v["Key"], v["VersionId"]) for v in doc.get("Versions", []))

    with LocalStack(**kw) as stack:
        s3 = stack.client("s3")
        bucket = stack.env["DATA_BUCKET"]
        for body in (b"secret v1", b"v2", b"v3"):
            s3.put_object(Bucket=bucket, Key="probe/x.json", Body=body)
        first = versions(stack)
        assert len(first) == 3 and all(v != "null" for _, v in first)
        s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": "probe/x.json", "VersionId": first[0][1]}]}
        )
        kept = versions(stack)
        assert len(kept) == 2
    with LocalStack(**kw) as stack:
        assert stack.restarted
        assert versions(stack) == kept


def test_reset_refuses_while_a_stack_holds_the_directory(serve: Any, tmp_path: Path) -> None:
    s = serve()
    token = _token(s, "rh")
    assert (
        s.call("POST", "/v1/packages/h/bundles", token, bundle_bytes(generate_records(2, seed=4)))[0] == 201
    )
    data = tmp_path / "data"
    reset = [sys.executable, "-m", "acx.local.serve", "--reset", "--data", str(data)]
    out = subprocess.run(reset, capture_output=True, text=True)
    assert out.returncode == 5 and "in use by a running local stack" in out.stderr
    assert (data / "stack.json").exists()
    status, doc = s.call("GET", "/v1/packages/h/memories", token)
    assert status == 200 and len(doc["records"]) == 2  # the running stack still has its data
    s.stop()
    # the control: stopped, the same reset empties it
    assert subprocess.run(reset, capture_output=True, text=True).returncode == 0 and not data.exists()


def test_a_missing_stack_json_is_refused_at_start_and_nothing_is_deleted(serve: Any, tmp_path: Path) -> None:
    s = serve()
    token = _token(s, "rm")
    assert (
        s.call("POST", "/v1/packages/m/bundles", token, bundle_bytes(generate_records(3, seed=5)))[0] == 201
    )
    s.stop()
    data = tmp_path / "data"
    saved = (data / "stack.json").read_bytes()
    (data / "stack.json").unlink()
    before = sorted(p.name for p in data.iterdir())
    out = subprocess.run(
        [sys.executable, "-m", "acx.local.serve", "--port", "0", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 5 and "but no stack.json" in out.stderr
    assert sorted(p.name for p in data.iterdir()) == before  # the journal, snapshot and keys are kept
    # the control: with stack.json restored, every acknowledged write is back
    (data / "stack.json").write_bytes(saved)
    s = serve()
    status, doc = s.call("GET", "/v1/packages/m/memories", token)
    assert status == 200 and len(doc["records"]) == 3
    s.stop()
