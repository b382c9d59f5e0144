"""The local stack's journal: frames round-trip, a torn tail is cut, a corrupt middle is an error,
and only state-changing requests are journaled."""

from __future__ import annotations

from pathlib import Path

import pytest

from acx.local.journal import Entry, Journal, JournalCorrupt, is_mutating


def _entry(i: int, body: bytes = b"") -> Entry:
    return Entry("POST", "/", "", [("x-amz-target", "DynamoDB_20120810.PutItem")], body or b"{%d}" % i, i)


def test_entries_round_trip_and_torn_tail_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "moto.journal"
    journal = Journal(path, fsync=True)
    for i in range(3):
        journal.append(_entry(i, b"x" * (i * 1000)))
    journal.close()
    assert [e.seed for e in Journal(path).entries()] == [0, 1, 2]
    assert path.stat().st_mode & 0o777 == 0o600
    full = path.stat().st_size
    with path.open("r+b") as fh:  # a crash in the middle of the 4th append
        fh.seek(0, 2)
        fh.write(b"\x00\x00\x00\x10\x00\x00")
    assert [e.seed for e in Journal(path).entries()] == [0, 1, 2]
    assert path.stat().st_size == full  # cut back to the last whole frame
    journal = Journal(path)
    journal.append(_entry(3))
    journal.close()
    assert [e.seed for e in Journal(path).entries()] == [0, 1, 2, 3]


def test_a_corrupt_frame_in_the_middle_is_reported_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "moto.journal"
    journal = Journal(path)
    for i in range(3):
        journal.append(_entry(i, b"y" * 100))
    journal.close()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorrupt):
        list(Journal(path).entries())


def _fifty(path: Path) -> list[int]:
    """Fifty acknowledged appends; the byte offset of each frame."""
    journal = Journal(path)
    offsets = []
    for i in range(50):
        offsets.append(path.stat().st_size if path.exists() else 0)
        journal.append(_entry(i, b"z" * 40))
    journal.close()
    offsets[0] = len(b"ACXJ1\n")
    return offsets


@pytest.mark.parametrize("byte", [0, 3, 7, 11])  # each byte of the two length fields and the CRC
def test_a_flipped_header_byte_in_the_middle_is_damage_not_a_torn_tail(tmp_path: Path, byte: int) -> None:
    path = tmp_path / "moto.journal"
    offsets = _fifty(path)
    data = bytearray(path.read_bytes())
    data[offsets[25] + byte] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorrupt, match="not a torn tail"):
        list(Journal(path).entries())
    assert path.read_bytes() == bytes(data)  # nothing was cut
    # the control: the same flip in the last frame is a torn tail, cut off
    path.write_bytes(b"")
    offsets = _fifty(path)
    data = bytearray(path.read_bytes())
    data[offsets[49] + byte] ^= 0x40
    path.write_bytes(bytes(data))
    assert [e.seed for e in Journal(path).entries()] == list(range(49))


def test_a_torn_tail_in_an_older_generation_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "moto.journal.1"
    _fifty(path)
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size - 10)
    with pytest.raises(JournalCorrupt):
        list(Journal(path).entries(newest=False))
    assert len(list(Journal(path).entries(newest=True))) == 49  # the newest journal may be torn


def _auth(service: str) -> dict[str, str]:
    return {
        "authorization": f"AWS4-HMAC-SHA256 Credential=testing/20261201/us-east-1/{service}/aws4_request, x"
    }


@pytest.mark.parametrize(
    ("method", "headers", "body", "expected"),
    [
        ("POST", {**_auth("dynamodb"), "x-amz-target": "DynamoDB_20120810.BatchWriteItem"}, b"{}", True),
        ("POST", {**_auth("dynamodb"), "x-amz-target": "DynamoDB_20120810.Query"}, b"{}", False),
        ("POST", {**_auth("dynamodb"), "x-amz-target": "DynamoDB_20120810.SomeNewWrite"}, b"{}", True),
        ("POST", {**_auth("kms"), "x-amz-target": "TrentService.Sign"}, b"{}", False),
        ("POST", {**_auth("kms"), "x-amz-target": "TrentService.CreateKey"}, b"{}", True),
        ("POST", {**_auth("sqs"), "x-amz-target": "AmazonSQS.SendMessage"}, b"{}", True),
        ("POST", {**_auth("sqs"), "x-amz-target": "AmazonSQS.ReceiveMessage"}, b"{}", False),
        ("POST", {**_auth("sqs"), "x-amz-target": "AmazonSQS.DeleteMessage"}, b"{}", False),
        ("POST", _auth("sns"), b"Action=Publish&TopicArn=x", True),
        ("POST", _auth("sns"), b"Action=ListTopics", False),
        ("PUT", _auth("s3"), b"data", True),
        ("DELETE", _auth("s3"), b"", True),
        ("GET", _auth("s3"), b"", False),
    ],
)
def test_only_state_changing_requests_are_journaled(
    method: str, headers: dict[str, str], body: bytes, expected: bool
) -> None:
    assert is_mutating(method, headers, "", body) is expected
