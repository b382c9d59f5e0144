"""Durable local state: an append-only, fsync'd journal of the mutating requests moto receives.

moto keeps everything in memory. The local stack wraps moto's WSGI application in
:class:`JournalApp`, which appends each state-changing request (method, path, query, headers, body
and a random seed) to ``<data>/moto.journal`` and fsyncs it *before* moto applies it and answers.
So every 2xx the service ever received from moto, and therefore every 2xx the local API answered,
is on disk; at start :func:`replay` feeds the journal back into a fresh moto, in the order it was
applied (mutations are serialised under one lock, so journal order is apply order).

Replay is deterministic because moto draws every identifier (S3 version ids, SQS message ids, KMS
key ids, ...) from one seedable generator: each entry records the seed it ran with. Key *material*
comes from the OS instead, so :class:`KeyStore` saves each KMS key's private key and symmetric
material to ``<data>/kms-keys.json`` (mode 0600) before CreateKey is answered, and restores them
after replay: key ids, public keys and signatures stay the same across restarts.

Not journaled, on purpose: reads, and SQS receive/delete/visibility calls (their receipt handles
are per-delivery). After a restart every message ever sent is in its queue again; the handlers
treat a message for a finished job as done (the job status is the idempotency key), and a pending
upload's message resumes its ingest. A request torn by ``kill -9`` mid-write was never applied nor
answered: the torn tail is cut off at start.

What it does NOT protect against: someone with write access to the data directory (the journal and
the key file are plain files, readable by the owner only), and a disk that lies about fsync.

One module: the journal and its replay are one format (entries, CRC, generations,
snapshots, key store) that must be read exactly as it was written; the WSGI wrapper that writes it
and the transport that replays it sit beside the format they share.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote_to_bytes, urlsplit

from acx.local import moto_dynamodb
from acx.local.heap import StoreFreezer

JOURNAL_NAME = "moto.journal"
SNAPSHOT_NAME = "moto.snapshot"
KEYS_NAME = "kms-keys.json"
_FRAME = struct.Struct(">IQI")  # header length, body length, crc32 of header + body
_MAGIC = b"ACXJ1\n"
_SNAP_MAGIC = b"ACXS1\n"
_SNAP_HEAD = struct.Struct(">QI")  # pickle length, crc32 of the pickle
#: Compact while running once the journal since the last snapshot is this large (and larger than the
#: snapshot): a restart then replays at most about this much. docs/LOCAL.md has the figures.
COMPACT_BYTES = 512 * 1024 * 1024

#: Actions that change no durable state (or only per-delivery state), per service.
READ_ONLY: dict[str, frozenset[str]] = {
    "dynamodb": frozenset(
        {
            "GetItem",
            "BatchGetItem",
            "Query",
            "Scan",
            "DescribeTable",
            "ListTables",
            "DescribeTimeToLive",
            "TransactGetItems",
            "DescribeContinuousBackups",
            "ListTagsOfResource",
            "DescribeEndpoints",
            "DescribeLimits",
        }
    ),
    "kms": frozenset(
        {
            "Sign",
            "Verify",
            "GetPublicKey",
            "DescribeKey",
            "ListKeys",
            "ListAliases",
            "Encrypt",
            "Decrypt",
            "ReEncrypt",
            "GenerateDataKey",
            "GenerateDataKeyWithoutPlaintext",
            "GenerateDataKeyPair",
            "GenerateRandom",
            "GenerateMac",
            "VerifyMac",
            "GetKeyPolicy",
            "GetKeyRotationStatus",
            "ListResourceTags",
            "ListGrants",
        }
    ),
    "sqs": frozenset(
        {
            "ReceiveMessage",
            "DeleteMessage",
            "DeleteMessageBatch",
            "ChangeMessageVisibility",
            "ChangeMessageVisibilityBatch",
            "GetQueueUrl",
            "GetQueueAttributes",
            "ListQueues",
            "ListQueueTags",
            "ListDeadLetterSourceQueues",
        }
    ),
}


@dataclass(frozen=True)
class Entry:
    """One journaled request, as moto received it."""

    method: str
    path: str  # as sent, percent-encoded (S3 keys are read from the raw path)
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    seed: int


class JournalCorrupt(RuntimeError):
    """A journal frame is damaged and is not a torn tail (see :meth:`Journal.entries`)."""


def _frame_at(data: bytes, offset: int) -> tuple[int, bytes, int] | None:
    """(header length, payload, end) of an intact frame at ``offset``, else None."""
    if offset + _FRAME.size > len(data):
        return None
    hlen, blen, crc = _FRAME.unpack_from(data, offset)
    start = offset + _FRAME.size
    end = start + hlen + blen
    if end > len(data) or data[start : start + 1] != b"{":
        return None
    payload = data[start:end]
    if zlib.crc32(payload) != crc:
        return None
    return hlen, payload, end


def _next_frame(data: bytes, offset: int) -> int | None:
    """The first offset at or after ``offset`` where an intact frame starts (linear scan; only run
    when a frame is damaged). A frame's header is JSON, so only offsets whose payload would start
    with ``{`` are checksummed."""
    for candidate in range(offset, len(data) - _FRAME.size):
        if data[candidate + _FRAME.size : candidate + _FRAME.size + 1] == b"{" and _frame_at(data, candidate):
            return candidate
    return None


class Journal:
    """Append-only file of :class:`Entry` frames; ``fsync=True`` makes each append durable."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self._fh: Any = None

    def entries(self, *, newest: bool = True) -> Iterator[Entry]:
        """Every complete entry; a torn last frame (a crash mid-append) is cut off the file.

        A frame that does not fit or fails its checksum is a torn tail only when nothing intact
        follows it and the journal is the newest (a crash tears the one append in flight, which was
        never acknowledged). Anything else is damage: :class:`JournalCorrupt`, never read as a
        shorter journal (cutting there would drop acknowledged writes). What it does NOT tell apart:
        a file cut short by something other than a crash, exactly at or inside its last frames,
        looks like a torn tail and loses those frames.
        """
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            data = fh.read()
        if not data.startswith(_MAGIC):
            raise JournalCorrupt(f"{self.path}: not an acx local journal")
        offset = len(_MAGIC)
        while offset < len(data):
            frame = _frame_at(data, offset)
            if frame is None:
                after = _next_frame(data, offset + 1)
                if after is not None or not newest:
                    where = f"; an intact frame follows at byte {after}" if after is not None else ""
                    raise JournalCorrupt(
                        f"{self.path}: damaged frame at byte {offset}{where} (not a torn tail: restore "
                        "the file from a backup, or reset the data directory)"
                    )
                with self.path.open("r+b") as fh:  # torn final frame
                    fh.truncate(offset)
                return
            hlen, payload, end = frame
            head = json.loads(payload[:hlen])
            yield Entry(
                method=head["m"],
                path=head["p"],
                query=head["q"],
                headers=[(str(k), str(v)) for k, v in head["h"]],
                body=payload[hlen:],
                seed=int(head["s"]),
            )
            offset = end

    def append(self, entry: Entry) -> int:
        """Write one frame and (with ``fsync``) make it durable before returning; returns its size."""
        if self._fh is None:
            new = not self.path.exists() or self.path.stat().st_size == 0
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._fh = os.fdopen(fd, "ab", buffering=0)
            if new:
                self._fh.write(_MAGIC)
        head = json.dumps(
            {"m": entry.method, "p": entry.path, "q": entry.query, "h": entry.headers, "s": entry.seed},
            separators=(",", ":"),
        ).encode()
        payload = head + entry.body
        self._fh.write(_FRAME.pack(len(head), len(entry.body), zlib.crc32(payload)) + payload)
        if self.fsync:
            os.fdatasync(self._fh.fileno())
        return _FRAME.size + len(payload)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def journal_file(data_dir: Path, generation: int) -> Path:
    """The journal of the requests after snapshot ``generation`` (0: no snapshot, the first journal)."""
    return data_dir / (JOURNAL_NAME if generation == 0 else f"{JOURNAL_NAME}.{generation}")


def snapshot_file(data_dir: Path, generation: int) -> Path:
    return data_dir / f"{SNAPSHOT_NAME}.{generation}"


def generations(data_dir: Path) -> tuple[list[int], list[int]]:
    """(snapshot generations, journal generations) present in ``data_dir``, ascending."""
    snaps: list[int] = []
    journals: list[int] = []
    for path in data_dir.iterdir() if data_dir.is_dir() else ():
        name = path.name
        if name == JOURNAL_NAME:
            journals.append(0)
        elif name.startswith(JOURNAL_NAME + ".") and name[len(JOURNAL_NAME) + 1 :].isdigit():
            journals.append(int(name[len(JOURNAL_NAME) + 1 :]))
        elif name.startswith(SNAPSHOT_NAME + ".") and name[len(SNAPSHOT_NAME) + 1 :].isdigit():
            snaps.append(int(name[len(SNAPSHOT_NAME) + 1 :]))
    return sorted(snaps), sorted(journals)


def is_state_file(name: str) -> bool:
    """A journal or snapshot file name (any generation), or a temporary file of one."""
    base = name[:-4] if name.endswith(".tmp") else name
    for prefix in (JOURNAL_NAME, SNAPSHOT_NAME):
        if base == JOURNAL_NAME or (base.startswith(prefix + ".") and base[len(prefix) + 1 :].isdigit()):
            return True
    return False


class _Crc:
    """A write-through file wrapper that counts bytes and their crc32 (the snapshot's checksum)."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        self.crc = 0
        self.size = 0

    def write(self, data: bytes) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return int(self.fh.write(data))


def fsync_dir(path: Path) -> None:
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def read_snapshot(path: Path) -> bytes:
    """The pickle of a snapshot file, checked (a snapshot is renamed into place only once complete,
    so a bad one is corruption, never a torn write: JournalCorrupt)."""
    data = path.read_bytes()
    if not data.startswith(_SNAP_MAGIC) or len(data) < len(_SNAP_MAGIC) + _SNAP_HEAD.size:
        raise JournalCorrupt(f"{path}: not an acx local snapshot")
    size, crc = _SNAP_HEAD.unpack_from(data, len(_SNAP_MAGIC))
    body = data[len(_SNAP_MAGIC) + _SNAP_HEAD.size :]
    if len(body) != size or zlib.crc32(body) != crc:
        raise JournalCorrupt(f"{path}: snapshot fails its checksum")
    return body


def write_snapshot(path: Path, fsync: bool = True) -> int:
    """Pickle this process's moto to ``path`` (tmp file, fsync, rename, fsync dir); returns bytes.
    The caller holds the mutation lock, so the snapshot is one consistent state."""
    from acx.local import snapshot

    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb", buffering=1024 * 1024) as fh:
        fh.write(_SNAP_MAGIC + _SNAP_HEAD.pack(0, 0))
        counted = _Crc(fh)
        snapshot.dump(counted)  # type: ignore[arg-type]
        fh.flush()
        fh.seek(len(_SNAP_MAGIC))
        fh.write(_SNAP_HEAD.pack(counted.size, counted.crc))
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)
    return len(_SNAP_MAGIC) + _SNAP_HEAD.size + counted.size


def write_private(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, mode 0600, durable (tmp file, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class KeyStore:
    """KMS key material of this moto, saved to ``kms-keys.json`` (0600) and restored after replay.

    The private keys sit in a plain file: anyone who can read the data directory can sign as the
    local stack. That is the local stack's trust boundary; AWS KMS never exports them.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys: dict[str, dict[str, Any]] = {}
        if path.exists():
            self._keys = json.loads(path.read_text(encoding="utf-8"))

    def save(self, arn: str) -> None:
        """Record the material of the key ``arn`` (just created in this process's moto)."""
        from cryptography.hazmat.primitives import serialization

        key = _kms_key(arn)
        doc: dict[str, Any] = {
            "keyMaterial": base64.b64encode(bytes(key.key_material)).decode(),
            "creationDate": key.creation_date,  # the trust registry's notBefore
        }
        private = getattr(getattr(key, "private_key", None), "private_key", None)
        if private is not None:
            doc["privateKeyPem"] = private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ).decode()
        self._keys[arn] = doc
        write_private(self.path, json.dumps(self._keys, indent=1, sort_keys=True).encode())

    def restore(self) -> int:
        """Put the saved material back into the (replayed) keys; returns how many were restored."""
        from cryptography.hazmat.primitives import serialization

        for arn, doc in self._keys.items():
            key = _kms_key(arn)
            key.key_material = base64.b64decode(doc["keyMaterial"])
            key.creation_date = doc.get("creationDate", key.creation_date)
            pem = doc.get("privateKeyPem")
            if pem is not None:
                key.private_key.private_key = serialization.load_pem_private_key(pem.encode(), None)
        return len(self._keys)


def _kms_key(arn: str) -> Any:
    from moto.kms.models import kms_backends

    _, _, _, region, account, resource = arn.split(":", 5)
    return kms_backends[account][region].keys[resource.split("/", 1)[1]]


# --------------------------------------------------------------------------- classification


def _service_of(headers: dict[str, str], query: dict[str, list[str]]) -> str:
    credential = ""
    auth = headers.get("authorization", "")
    if "Credential=" in auth:
        credential = auth.split("Credential=", 1)[1].split(",", 1)[0]
    elif "X-Amz-Credential" in query:
        credential = query["X-Amz-Credential"][0]
    parts = credential.split("/")
    return parts[3] if len(parts) >= 5 else ""


def _action_of(headers: dict[str, str], body: bytes) -> str:
    target = headers.get("x-amz-target", "")
    if target:
        return target.rsplit(".", 1)[-1]
    if body[:7] == b"Action=" or b"&Action=" in body[:4096]:
        values = parse_qs(body[:4096].decode("latin-1")).get("Action")
        return values[0] if values else ""
    return ""


def is_mutating(method: str, headers: dict[str, str], query: str, body: bytes) -> bool:
    """Whether moto's answer to this request depends on, or changes, durable state worth journaling."""
    if method in ("GET", "HEAD", "OPTIONS"):
        return False
    q = parse_qs(query, keep_blank_values=True)
    service = _service_of(headers, q)
    if service == "s3":
        return True  # PUT / POST (DeleteObjects, multipart) / DELETE
    action = _action_of(headers, body) or (q.get("Action") or [""])[0]
    if service == "sns":
        return not action.startswith(("List", "Get"))
    return action not in READ_ONLY.get(service, frozenset())


# --------------------------------------------------------------------------- the WSGI wrapper

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def _headers_of(environ: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for key, value in environ.items():
        if key.startswith("HTTP_") and key != "HTTP_TRANSFER_ENCODING":
            out.append((key[5:].replace("_", "-").lower(), str(value)))
    if environ.get("CONTENT_TYPE"):
        out.append(("content-type", str(environ["CONTENT_TYPE"])))
    return out


def _environ_for(entry: Entry) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": entry.method,
        "PATH_INFO": unquote_to_bytes(entry.path).decode("latin-1"),  # as a WSGI server decodes it
        "RAW_URI": entry.path + ("?" + entry.query if entry.query else ""),
        "REQUEST_URI": entry.path + ("?" + entry.query if entry.query else ""),
        "QUERY_STRING": entry.query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SCRIPT_NAME": "",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(entry.body),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "CONTENT_LENGTH": str(len(entry.body)),
    }
    for name, value in entry.headers:
        if name == "content-type":
            environ["CONTENT_TYPE"] = value
        elif name != "content-length":
            environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


class JournalApp:
    """WSGI middleware in front of moto: journal, then apply, one mutation at a time.

    The state on disk is a snapshot of generation G (none for G = 0) plus the journals of
    generations >= G, in order; :meth:`compact` starts generation G + 1 (see :meth:`compact`).
    """

    def __init__(
        self,
        app: WsgiApp,
        data_dir: Path,
        keys: KeyStore,
        *,
        fsync: bool = True,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        self.app = app
        self.data_dir = data_dir
        self.fsync = fsync
        self.keys = keys
        self.lock = threading.Lock()
        self.applied = 0
        self.generation = 0
        self.journal = Journal(journal_file(data_dir, 0), fsync=fsync)
        self.compact_bytes = compact_bytes
        self.tail_bytes = 0  # journal bytes since the last snapshot
        self.snapshot_bytes = 0
        self.stats: dict[str, float] = {}  # what the last replay and compaction cost (docs, bench)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        if method in ("GET", "HEAD", "OPTIONS") or str(environ.get("PATH_INFO", "")).startswith("/moto-api"):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length:
            body = environ["wsgi.input"].read(length)
        elif environ.get("wsgi.input_terminated"):  # chunked: werkzeug decodes and ends the stream
            body = environ["wsgi.input"].read()
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        headers = _headers_of(environ)
        query = str(environ.get("QUERY_STRING", ""))
        if not is_mutating(method, dict(headers), query, body):
            # Under the lock too: a read that draws from moto's generator (an SQS receipt handle)
            # while a mutation runs would change the ids the mutation gets, and replay would differ.
            with self.lock:
                return list(self.app(environ, start_response))
        raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "").split("?", 1)[0]
        path = raw or quote(str(environ.get("PATH_INFO", "")).encode("latin-1"), safe="/")
        entry = Entry(method, path, query, headers, body, secrets.randbits(63))
        with self.lock:
            self.tail_bytes += self.journal.append(entry)
            try:
                return self._apply(entry, environ, start_response)
            finally:
                self._maybe_compact()

    def dynamodb(self, headers: list[tuple[str, str]], body: bytes) -> tuple[int, dict[str, str], bytes]:
        """A DynamoDB JSON request from this process, answered by moto's handler without WSGI
        (:func:`acx.local.moto_dynamodb.call`), journaled like any other when it changes state."""
        from moto.moto_api._internal import mock_random

        head = dict(headers)
        if not is_mutating("POST", head, "", body):
            with self.lock:
                return moto_dynamodb.call(head, body)
        entry = Entry("POST", "/", "", headers, body, secrets.randbits(63))
        with self.lock:
            self.tail_bytes += self.journal.append(entry)
            mock_random.seed(entry.seed)
            try:
                answer = moto_dynamodb.call(head, body)
            finally:
                self.applied += 1
                self._maybe_compact()
            return answer

    def _apply(self, entry: Entry, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        from moto.moto_api._internal import mock_random

        status: list[str] = []

        def capture(s: str, h: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(s)
            return start_response(s, h, exc_info)

        mock_random.seed(entry.seed)
        chunks = list(self.app(environ, capture))
        self.applied += 1
        if (
            status
            and status[0].startswith("200")
            and dict(entry.headers).get("x-amz-target", "").endswith(".CreateKey")
        ):
            arn = json.loads(b"".join(chunks))["KeyMetadata"]["Arn"]
            self.keys.save(arn)  # before the answer: a key id is never seen without its material
        return chunks

    def replay(self) -> int:
        """Load the newest snapshot, apply every journaled entry after it to this (fresh) moto, then
        restore the keys; returns the count of entries replayed. Compacts when the journal replayed
        was long (so the next start is short even if this run ends with ``kill -9``)."""
        import time

        from moto.moto_api._internal import mock_random

        from acx.local import snapshot

        cpu, wall = time.process_time(), time.perf_counter()
        count = 0
        heap = StoreFreezer()  # what replay rebuilds is moto's store: kept out of the collector
        with self.lock:
            snaps, journals = generations(self.data_dir)
            base = snaps[-1] if snaps else 0
            if base:
                data = read_snapshot(snapshot_file(self.data_dir, base))
                self.snapshot_bytes = len(data)
                snapshot.load(data)
                heap.after_request()
            self.stats["snapshot_load_cpu"] = time.process_time() - cpu
            tail = [g for g in journals if g >= base]
            for generation in tail:
                journal = Journal(journal_file(self.data_dir, generation), fsync=self.fsync)
                for entry in journal.entries(newest=generation == tail[-1]):
                    self._replay_one(entry, mock_random)
                    heap.after_request()
                    count += 1
                self.tail_bytes += journal_file(self.data_dir, generation).stat().st_size
            self.generation = max([base, *tail])
            self.journal = Journal(journal_file(self.data_dir, self.generation), fsync=self.fsync)
            self._remove_before(base)
            self.keys.restore()
            mock_random.seed(secrets.randbits(63))
            self.stats.update(
                replayed=count,
                replayed_bytes=self.tail_bytes,
                replay_cpu=time.process_time() - cpu,
                replay_wall=time.perf_counter() - wall,
            )
            if self.tail_bytes > self.compact_bytes:
                self._compact_locked()
        return count

    def _replay_one(self, entry: Entry, mock_random: Any) -> None:
        mock_random.seed(entry.seed)
        try:
            head = dict(entry.headers)
            if head.get("x-amz-target", "").startswith(moto_dynamodb.TARGET_PREFIX):
                moto_dynamodb.call(head, entry.body)  # as it ran (same handler either way)
                return
            for _ in self.app(_environ_for(entry), lambda *a, **k: None):
                pass
        except Exception:  # noqa: S110 - it failed the same way the first time: never acknowledged
            pass

    def compact(self) -> int:
        """Snapshot moto now and start a new journal generation; returns the snapshot's size."""
        with self.lock:
            return self._compact_locked()

    def _maybe_compact(self) -> None:
        if self.tail_bytes > max(self.compact_bytes, self.snapshot_bytes):
            self._compact_locked()

    def _compact_locked(self) -> int:
        """Under the mutation lock: snapshot G + 1 = the state after every entry journaled so far.

        Crash-safe by order: (1) the snapshot is written to a tmp file, fsynced and renamed into
        place; (2) only then are the older journals and snapshots deleted; (3) new entries go to
        journal G + 1. A crash before the rename leaves snapshot G and journal G, which still hold
        everything (the tmp file is ignored and removed); a crash after it leaves snapshot G + 1,
        which holds everything the older files did (they are removed at the next start).
        """
        import time

        cpu, wall = time.process_time(), time.perf_counter()
        new = self.generation + 1
        size = write_snapshot(snapshot_file(self.data_dir, new), fsync=self.fsync)
        self.journal.close()
        self.generation = new
        self.journal = Journal(journal_file(self.data_dir, new), fsync=self.fsync)
        self._remove_before(new)
        self.snapshot_bytes, self.tail_bytes = size, 0
        self.stats.update(
            compact_cpu=time.process_time() - cpu,
            compact_wall=time.perf_counter() - wall,
            snapshot_bytes=size,
        )
        return size

    def _remove_before(self, generation: int) -> None:
        """Delete the journals and snapshots a snapshot of ``generation`` covers, and tmp files."""
        snaps, journals = generations(self.data_dir)
        doomed = [snapshot_file(self.data_dir, g) for g in snaps if g < generation]
        doomed += [journal_file(self.data_dir, g) for g in journals if g < generation]
        doomed += [p for p in self.data_dir.glob("moto.*.tmp")]
        for path in doomed:
            path.unlink(missing_ok=True)
        if doomed and self.fsync:
            fsync_dir(self.data_dir)

    def close(self, compact: bool = True) -> None:
        """A clean stop: snapshot what the journal holds since the last one (a fast next start)."""
        with self.lock:
            if compact and self.tail_bytes:
                self._compact_locked()
            self.journal.close()


def serve(data_dir: Path | None, port: int, *, fsync: bool = True, compact_bytes: int = COMPACT_BYTES) -> Any:
    """Start a moto server on 127.0.0.1:``port`` (0 = any), journaled under ``data_dir`` when given.

    Returns the started werkzeug server (``server_address``, ``shutdown()``) after any replay.
    """
    from moto.moto_server.threaded_moto_server import MotoRequestHandler
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app: Any = DomainDispatcherApplication(create_backend_app)
    journal_app: JournalApp | None = None
    if data_dir is not None:
        from moto.moto_api._internal.models import moto_api_backend

        moto_api_backend.reset()  # an in-process moto may hold a previous stack's state: replay onto none
        journal_app = JournalApp(
            app, data_dir, KeyStore(data_dir / KEYS_NAME), fsync=fsync, compact_bytes=compact_bytes
        )
        journal_app.replay()
        app = journal_app
    server = make_server("127.0.0.1", port, app, True, request_handler=MotoRequestHandler)
    server.journal_app = journal_app  # type: ignore[attr-defined]
    server.wsgi_app = app  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, name="acx-moto", daemon=True).start()
    return server


class InProcessTransport:
    """botocore ``before-send`` hook: requests for moto's (or the gateway's S3) address are handed to
    moto's WSGI application in this process, journaled the same way, without a socket, an HTTP server
    or a second HTTP parse (py-spy: about a fifth of a presigned ingest on the local stack went there).

    Only for a stack whose moto runs in this process; requests for any other address go out as usual.
    """

    def __init__(
        self, app: WsgiApp, prefixes: tuple[str, ...], moto_prefix: str = "", heap: StoreFreezer | None = None
    ) -> None:
        self.app = app
        self.prefixes = prefixes
        self.moto_prefix = moto_prefix  # DynamoDB requests for it skip WSGI (moto_dynamodb.call)
        self.heap = heap  # told after each DynamoDB request (acx/local/heap.py)

    def __call__(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse
        from moto.core.botocore_stubber import MockRawResponse

        url = str(request.url)
        if not url.startswith(self.prefixes):
            return None
        parts = urlsplit(url)
        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = [
            (str(k).lower(), v.decode("latin-1") if isinstance(v, bytes) else str(v))
            for k, v in request.headers.items()
        ]
        headers = [(k, v) for k, v in headers if k not in ("host", "transfer-encoding")]
        headers.append(("host", parts.netloc))
        if self.moto_prefix and url.startswith(self.moto_prefix) and request.method == "POST":
            target = next((v for k, v in headers if k == "x-amz-target"), "")
            if target.startswith(moto_dynamodb.TARGET_PREFIX):
                code, head, payload = self._dynamodb(headers, body or b"")
                return AWSResponse(url, code, head, MockRawResponse(payload))
        environ = _environ_for(Entry(request.method, parts.path or "/", parts.query, headers, body or b"", 0))
        environ["RAW_URI"] = environ["REQUEST_URI"] = (parts.path or "/") + (
            "?" + parts.query if parts.query else ""
        )
        status: list[Any] = []

        def start_response(s: str, h: list[tuple[str, str]], exc_info: Any = None) -> None:
            status[:] = [s, h]

        payload = b"".join(self.app(environ, start_response))
        code = int(status[0].split(" ", 1)[0])
        return AWSResponse(url, code, dict(status[1]), MockRawResponse(payload))

    def _dynamodb(self, headers: list[tuple[str, str]], body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            if isinstance(self.app, JournalApp):
                return self.app.dynamodb(headers, body)
            return moto_dynamodb.call(dict(headers), body)  # an in-memory stack: no journal, no lock
        finally:
            if self.heap is not None:
                self.heap.after_request()
