"""The durable queue: SQS's receive, visibility, delete and redrive; refused when damaged."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from acx.local.embedded.queue import AlarmFile, QueueDamaged, Queues, QueueSender
from acx.usecases.ports import AlarmsPort, QueuePort


def test_a_received_message_is_hidden_until_deleted_or_its_visibility_ends(tmp_path: Path) -> None:
    q = Queues(tmp_path / "q.sqlite", create=True)
    q.send("a", "one")
    q.send("b", "other queue")
    (m,) = q.receive("a", 10, visibility=60)
    assert m.body == "one" and m.receives == 1 and q.counts("a") == (0, 1)
    assert q.receive("a", 10, visibility=60) == []
    assert q.change_visibility(m.receipt, 0)
    (again,) = q.receive("a", 10, visibility=60)
    assert again.receives == 2 and again.receipt != m.receipt
    assert not q.delete(m.receipt)  # a stale receipt deletes nothing
    assert q.delete(again.receipt) and q.counts("a") == (0, 0)
    assert q.counts("b") == (1, 0)


def test_a_message_received_max_times_moves_to_the_dlq_at_its_next_receive(tmp_path: Path) -> None:
    q = Queues(tmp_path / "q.sqlite", create=True)
    q.send("a", "poison")
    for n in range(1, 4):
        (m,) = q.receive("a", 10, visibility=0, dlq="a-dlq", max_receives=3)
        assert m.receives == n
    assert q.receive("a", 10, visibility=0, dlq="a-dlq", max_receives=3) == []
    assert q.bodies("a") == [] and q.bodies("a-dlq") == ["poison"]


def test_a_sent_message_survives_kill_9_and_is_visible_again_after_release(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite"
    code = (
        "import os, sys\n"
        "from acx.local.embedded.queue import Queues\n"
        f"q = Queues(__import__('pathlib').Path({str(path)!r}), create=True)\n"
        "q.send('a', 'acknowledged')\n"
        "q.receive('a', 1, visibility=3600)\n"
        "print('sent', flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "sent" and proc.returncode == -9
    q = Queues(path, create=False)
    assert q.receive("a", 1, visibility=60) == []  # still in flight for the dead consumer...
    assert q.release_all() == 1
    assert [m.body for m in q.receive("a", 1, visibility=60)] == ["acknowledged"]  # ...until released


@pytest.mark.parametrize("damage", ["row", "cut", "foreign"])
def test_a_damaged_queue_file_is_refused_loudly(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "q.sqlite"
    q = Queues(path, create=True)
    for i in range(50):
        q.send("a", f"message {i} " + "x" * 200)
    q.close()
    Queues(path, create=False).close()  # the control: intact, it opens
    if damage == "row":
        db = sqlite3.connect(path)
        db.execute("UPDATE messages SET body = 'changed' WHERE rowid = 7")
        db.commit()
        db.close()
    elif damage == "cut":
        raw = path.read_bytes()
        path.write_bytes(raw[: len(raw) // 2])
    else:
        path.write_bytes(b"not a database at all" * 100)
    before = path.read_bytes()
    with pytest.raises(QueueDamaged):
        Queues(path, create=True)
    assert path.read_bytes() == before  # nothing repaired, nothing dropped


def test_the_ports_send_json_and_publish_alarms_to_a_file(tmp_path: Path) -> None:
    q = Queues(tmp_path / "q.sqlite", create=True)
    sender: QueuePort = QueueSender(q, "export")
    alarms: AlarmsPort = AlarmFile(tmp_path / "alarms.jsonl")
    assert sender.configured and alarms.configured
    sender.send({"cartridgeId": "c1"})
    assert [json.loads(b) for b in q.bodies("export")] == [{"cartridgeId": "c1"}]
    alarms.publish("verify failed", {"package": "p"})
    (line,) = (tmp_path / "alarms.jsonl").read_text().splitlines()
    assert json.loads(line)["subject"] == "verify failed"
