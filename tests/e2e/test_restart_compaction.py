"""Journal compaction (acx/local/journal.py): a snapshot of moto plus the journal after it.

- a process that dies (``os._exit``, as ``kill -9`` leaves the files) at each step of a compaction
  loses no acknowledged write, and the next start finds the log, checkpoint and keys unchanged;
- ``python -m acx.local.serve --compact-mb`` compacting again and again under a stream of writes,
  killed with SIGKILL at an arbitrary moment, loses no acknowledged write;
- after compaction a restart replays nothing (the cost no longer grows with history).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.common import bundle_bytes, generate_records
from tests.e2e.test_restart import Serve, _ids, _state, _survivors, _token

pytestmark = pytest.mark.e2e

_CHILD = textwrap.dedent(
    """
    import json, os, sys, urllib.request
    from pathlib import Path
    from acx.local import journal
    from acx.local.stack import LocalStack
    from bench.common import bundle_bytes, generate_records

    data, name, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    point = name.rstrip("0123456789")

    def die(*_a, **_k):
        os._exit(9)  # no cleanup, no flush: what kill -9 leaves on disk

    def call(stack, method, path, token, body=None):
        req = urllib.request.Request(stack.endpoint + path, data=body, method=method,
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())

    stack = LocalStack(port=0, quiet=True, verify_interval=None, data_dir=data).start()
    token = stack.token("cz")
    records = generate_records(30, seed=int.from_bytes(name.encode(), "big") % 1000, prefix=name)
    call(stack, "POST", "/v1/packages/c/bundles", token, bundle_bytes(records))
    ids = sorted(r["id"] for r in records if "alt-" not in r["id"])
    state = {"ids": ids, "log": call(stack, "GET", "/v1/packages/c/log", token), "token": token}
    out.write_text(json.dumps(state))  # everything above was acknowledged
    app = stack._moto.journal_app
    if point == "before-rename":
        real = journal.os.replace
        digits = tuple("0123456789")
        journal.os.replace = lambda src, dst: die() if str(dst).endswith(digits) else real(src, dst)
    elif point == "after-rename":
        type(app)._remove_before = die
    elif point == "after-remove":
        real_remove = type(app)._remove_before
        def remove_then_die(self, generation):
            real_remove(self, generation)
            die()
        type(app)._remove_before = remove_then_die
    app.compact()
    die()
    """
)


@pytest.mark.parametrize("point", ["before-rename", "after-rename", "after-remove"])
def test_a_crash_at_each_step_of_a_compaction_loses_nothing_acknowledged(tmp_path: Path, point: str) -> None:
    from acx.local.journal import generations
    from acx.local.stack import LocalStack

    data = tmp_path / "data"
    out = tmp_path / "acked.json"
    for round_ in range(2):  # the second round crashes compacting on top of the first's leftovers
        snaps_before = generations(data)[0] if data.exists() else []
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(data), f"{point}{round_}", str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 9, done.stderr[-2000:]
        acked = json.loads(out.read_text())
        snaps, journals = generations(data)
        leftovers = sorted(p.name for p in data.iterdir() if p.name.endswith(".tmp"))
        with LocalStack(port=0, quiet=True, verify_interval=None, data_dir=data) as stack:
            assert stack.restarted
            api = Serve(data, tmp_path / "log")
            api.endpoint = stack.endpoint
            token = acked["token"]
            state = _state(api, token, "c")  # verifies ok
            assert state["log"] == acked["log"]
            assert set(acked["ids"]) <= _ids(api, token, "c")
            replayed = stack._moto.journal_app.stats["replayed"]
        # Which files the crash left decides what the start had to do:
        if point == "before-rename":
            assert leftovers and snaps == snaps_before  # the new snapshot never landed
            assert replayed > 0  # so the old snapshot (if any) and the journals were replayed
        else:
            assert snaps[-1] > max(snaps_before, default=0)  # it landed
            assert not journals or journals[-1] <= snaps[-1]  # older journals, left or not, are covered
            assert replayed == 0  # the snapshot holds everything; the journal after it is empty
        assert not [p for p in data.iterdir() if p.name.endswith(".tmp")]  # removed at start


def test_serve_compacting_again_and_again_killed_anywhere_keeps_every_acknowledged_write(
    tmp_path: Path,
) -> None:
    from acx.local.journal import generations

    class Compacting(Serve):
        def start(self, timeout: float = 120) -> Serve:
            import os

            os.environ["ACX_LOCAL_COMPACT_MB"] = "0.2"  # compact every ~200 KB of journal
            try:
                return super().start(timeout)
            finally:
                os.environ.pop("ACX_LOCAL_COMPACT_MB", None)

    data = tmp_path / "data"
    s = Compacting(data, tmp_path / "serve.log").start()
    token = _token(s, "ck")
    acked: set[str] = set()
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            batch = generate_records(20, seed=5000 + i, prefix=f"k{i}")
            try:
                code, _ = s.call("POST", "/v1/packages/k/bundles", token, bundle_bytes(batch))
            except OSError:
                return  # died mid-request: not acknowledged
            if code == 201:
                acked.update(_survivors(batch))
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and generations(data)[0][-1:] < [3]:
        time.sleep(0.2)  # until it has compacted a few times
    assert generations(data)[0][-1] >= 3, "serve never compacted"
    time.sleep(0.37)
    s.kill()
    stop.set()
    t.join(60)
    assert acked

    s = Serve(data, tmp_path / "serve.log").start()
    assert acked <= _ids(s, token, "k")
    state = _state(s, token, "k")  # the log verifies ok
    assert state["log"]["size"] >= len(acked)
    s.stop()


def test_after_compaction_a_restart_replays_nothing_and_finds_the_same_state(tmp_path: Path) -> None:
    from acx.local.stack import LocalStack

    data = tmp_path / "data"
    kw: dict[str, Any] = {"port": 0, "quiet": True, "verify_interval": None, "data_dir": data}
    with LocalStack(**kw) as stack:
        api = Serve(data, tmp_path / "log")
        api.endpoint = stack.endpoint
        token = stack.token("cr")
        status, _ = api.call(
            "POST", "/v1/packages/r/bundles", token, bundle_bytes(generate_records(25, seed=4))
        )
        assert status == 201
        before = _state(api, token, "r")
        app = stack._moto.journal_app
        app.close = lambda compact=True: type(app).close(app, compact=False)  # as if killed: no snapshot
    with LocalStack(**kw) as stack:
        stats = dict(stack._moto.journal_app.stats)
        api.endpoint = stack.endpoint
        assert _state(api, token, "r") == before
    assert stats["replayed"] > 0  # the whole history
    with LocalStack(**kw) as stack:  # the previous stop was clean: it compacted
        stats = dict(stack._moto.journal_app.stats)
        api.endpoint = stack.endpoint
        assert _state(api, token, "r") == before
    assert stats["replayed"] == 0
    assert json.loads((data / "stack.json").read_text())  # the data directory is still whole
