"""The local stack's promises on its data directory (docs/LOCAL.md): `python -m acx.local.serve --data DIR`,
stopped cleanly or killed with SIGKILL at several points, comes back with every acknowledged write,
the same log and checkpoints, the same signing key id and trust registry, the dev tokens it issued
still valid, and every upload acknowledged before the stop finished. A damaged, missing or foreign
file is refused loudly at start and nothing is deleted; a reset refuses while a stack holds the
directory; memory stays bounded under load."""

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


def _upload(s: Serve, token: str, package: str, records: list[dict[str, Any]]) -> str:
    """A presigned upload, acknowledged (the PUT answered 200); returns its id."""
    status, up = s.call("POST", f"/v1/packages/{package}/uploads", token, b"{}")
    assert status == 201, up
    put = urllib.request.Request(up["url"], data=bundle_bytes(records), method="PUT", headers=up["headers"])  # noqa: S310
    with urllib.request.urlopen(put, timeout=120) as resp:  # noqa: S310
        assert resp.status == 200
    return str(up["uploadId"])


def _finished(s: Serve, token: str, package: str, upload_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, job = s.call("GET", f"/v1/packages/{package}/uploads/{upload_id}", token)
        assert status == 200, job
        if job["status"] != "pending" or time.monotonic() > deadline:
            return dict(job)
        time.sleep(0.25)


@pytest.mark.parametrize("stop", ["clean", "kill"])
def test_an_upload_acknowledged_before_a_stop_finishes_after_the_restart(
    serve: Any, tmp_path: Path, stop: str
) -> None:
    s = serve()
    token = _token(s, "ru")
    records = generate_records(300, seed=31, prefix="stopped")
    upload_id = _upload(s, token, "u", records)
    s.stop() if stop == "clean" else s.kill()  # at once: the ingest has at most begun
    s = serve()
    job = _finished(s, token, "u", upload_id)
    assert job["status"] == "ingested", job
    assert _survivors(records) <= _ids(s, token, "u")
    _state(s, token, "u")  # and the log verifies
    s.stop()


def test_reset_empties_everything(serve: Any, tmp_path: Path) -> None:
    s = serve()
    token = _token(s, "rz")
    status, _ = s.call("POST", "/v1/packages/z/bundles", token, bundle_bytes(generate_records(3, seed=9)))
    assert status == 201
    keys = _state(s, token, "z")["keys"]
    s.stop()
    data = tmp_path / "data"
    names = {p.name for p in data.iterdir()}
    state = {"acx.sqlite", "queues.sqlite", "signing.key", "forget.key", "presign.key", "issuer.key"}
    assert state | {"lock", "objects"} <= names
    assert all((data / n).stat().st_mode & 0o077 == 0 for n in state)
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
    assert (data / "acx.sqlite").exists()
    status, doc = s.call("GET", "/v1/packages/h/memories", token)
    assert status == 200 and len(doc["records"]) == 2  # the running stack still has its data
    s.stop()
    # the control: stopped, the same reset empties it
    assert subprocess.run(reset, capture_output=True, text=True).returncode == 0 and not data.exists()


def _start(data: Path) -> subprocess.CompletedProcess[str]:
    """A start that is expected to be refused (it would otherwise serve until killed by the timeout)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "acx.local.serve",
            "--port",
            "0",
            "--data",
            str(data),
            "--verify-interval",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tree(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()}


def _filled(serve: Any, tmp_path: Path, tenant: str) -> tuple[str, set[str]]:
    """A data directory with acknowledged writes and a stored upload, cleanly stopped."""
    s = serve()
    token = _token(s, tenant)
    records = generate_records(30, seed=51, prefix=tenant)
    assert s.call("POST", "/v1/packages/m/bundles", token, bundle_bytes(records))[0] == 201
    uploaded = generate_records(20, seed=52, prefix=f"{tenant}-up")
    assert _finished(s, token, "m", _upload(s, token, "m", uploaded))["status"] == "ingested"
    s.stop()
    return token, _survivors(records) | _survivors(uploaded)


@pytest.mark.parametrize(
    "name",
    ["acx.sqlite", "queues.sqlite", "signing.key", "forget.key", "presign.key", "issuer.key", "objects"],
)
def test_a_missing_file_is_refused_at_start_and_nothing_is_deleted(
    serve: Any, tmp_path: Path, name: str
) -> None:
    token, acked = _filled(serve, tmp_path, "rm")
    data = tmp_path / "data"
    aside = tmp_path / "aside"
    (data / name).rename(aside)
    before = _tree(data)
    out = _start(data)
    assert out.returncode == 5 and "nothing was created or deleted" in out.stderr, out.stderr[-2000:]
    assert _tree(data) == before  # nothing created, nothing deleted
    # the control: with the file back, every acknowledged write is there
    aside.rename(data / name)
    s = serve()
    assert acked <= _ids(s, token, "m")
    s.stop()


def _flip(path: Path, at: float) -> None:
    raw = bytearray(path.read_bytes())
    i = int(len(raw) * at)
    raw[i] ^= 0x40
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    "damage",
    [
        "cut acx.sqlite",
        "header acx.sqlite",
        "cut queues.sqlite",
        "flip signing.key",
        "flip forget.key",
        "cut presign.key",
        "flip issuer.key",
        "flip an object",
        "foreign acx.sqlite",
    ],
)
def test_a_damaged_file_is_refused_loudly_at_start_never_read_as_a_shorter_store(
    serve: Any, tmp_path: Path, damage: str
) -> None:
    token, acked = _filled(serve, tmp_path, "rd")
    data = tmp_path / "data"
    how, target = damage.split(" ", 1)
    path = next(data.rglob("*.v")) if target == "an object" else data / target
    saved = path.read_bytes()
    if how == "cut":
        path.write_bytes(saved[: len(saved) // 2])
    elif how == "header":
        _flip(path, 0.0)  # the file's magic
    elif how == "foreign":
        path.write_bytes(b"a file that is not ours\n" * 1000)
    elif target.endswith(".key"):
        raw = bytearray(saved)
        i = raw.index(b'"key": "') + 9
        raw[i] = ord("0") if raw[i] != ord("0") else ord("1")
        path.write_bytes(bytes(raw))
    else:
        _flip(path, 0.6)
    before = _tree(data)
    out = _start(data)
    assert out.returncode == 5 and "damaged" in out.stderr, out.stderr[-2000:]
    assert _tree(data) == before  # refused, left as it was for an operator to look at
    # the control: the intact file back, the same start serves every acknowledged write
    path.write_bytes(saved)
    s = serve()
    assert acked <= _ids(s, token, "m")
    s.stop()


def test_a_flipped_byte_in_the_write_ahead_log_after_kill_9_is_refused(serve: Any, tmp_path: Path) -> None:
    """After a kill -9 the last commits live in acx.sqlite-wal: SQLite would drop every frame from a
    damaged one on, a shorter store that verifies. The start must refuse instead."""
    s = serve()
    token = _token(s, "rw")
    acked: set[str] = set()
    for i in range(5):
        records = generate_records(10, seed=60 + i, prefix=f"wal{i}")
        assert s.call("POST", "/v1/packages/w/bundles", token, bundle_bytes(records))[0] == 201
        acked |= _survivors(records)
    s.kill()
    data = tmp_path / "data"
    wal = data / "acx.sqlite-wal"
    assert wal.exists() and wal.stat().st_size > 0
    saved = wal.read_bytes()
    _flip(wal, 0.3)
    out = _start(data)
    assert out.returncode == 5 and "damaged" in out.stderr, out.stderr[-2000:]
    wal.write_bytes(saved)  # the control
    s = serve()
    assert acked <= _ids(s, token, "w")
    s.stop()


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_memory_stays_bounded_under_load(serve: Any, tmp_path: Path) -> None:
    """Resident memory after a warm-up and after five times as many requests differs little: nothing
    grows with the number of requests (the journal-era stack grew 7x in a minute)."""
    from concurrent.futures import ThreadPoolExecutor

    s = serve()
    token = _token(s, "rl")
    assert (
        s.call("POST", "/v1/packages/l/bundles", token, bundle_bytes(generate_records(200, seed=71)))[0]
        == 201
    )

    def work(i: int) -> int:
        if i % 10 == 0:
            batch = generate_records(3, seed=10_000 + i, prefix=f"load{i}")
            return s.call("POST", "/v1/packages/l/bundles", token, bundle_bytes(batch))[0]
        if i % 2:
            return s.call("GET", "/v1/packages/l/memories?limit=50", token)[0]
        return s.call("GET", "/v1/packages/l/memories/search?q=retry&k=5", token)[0]

    assert s.proc is not None
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(work, range(300))) <= {200, 201}
        warm = _rss_kb(s.proc.pid)
        assert set(pool.map(work, range(300, 1800))) <= {200, 201}
        after = _rss_kb(s.proc.pid)
    assert after < warm * 1.3 + 20_000, (warm, after)
    s.stop()
