"""The embedded local backend of a data directory (SQLite for what DynamoDB holds, a directory for
what S3 holds, key files for what KMS holds, a SQLite queue for SQS), composed into ``Deps``.

Files of a data directory (docs/LOCAL.md): ``acx.sqlite`` (the log, jobs, idempotency: what
DynamoDB holds), ``queues.sqlite`` (what SQS holds), ``objects/<bucket>/`` (what S3 holds),
``signing.key`` (the checkpoint signer: KMS), ``forget.key`` (the tombstone HMAC key: KMS),
``presign.key`` (the presigned URLs' HMAC secret), ``issuer.key`` (the dev token issuer, owned by the
stack), ``alarms.jsonl`` (the alarm topic) and ``lock``.

Opening is all or nothing: a directory holding none of the state files is a first start and gets
every one of them; one holding all of them is opened and checked (every file refused loudly when it
is damaged); anything in between is refused (:class:`DataDirDamaged`) and nothing is created or
deleted. A missing database beside existing objects or keys is never read as a fresh store.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_plus

from acx.config import Settings
from acx.core.checkpoint import NoteSigner
from acx.local.embedded.keys import FileKeyer, FileSigner, KeyFileDamaged, ed25519_key, key_bytes
from acx.local.embedded.objects import DirectoryObjects, ObjectDamaged
from acx.local.embedded.queue import AlarmFile, QueueDamaged, Queues, QueueSender
from acx.local.embedded.search_index import DirectorySearchIndex
from acx.local.presigned import Presigner
from acx.usecases.deps import Deps

DB_NAME = "acx.sqlite"
QUEUES_NAME = "queues.sqlite"
SIGNING_KEY = "signing.key"
FORGET_KEY = "forget.key"
PRESIGN_KEY = "presign.key"
ISSUER_KEY = "issuer.key"
OBJECTS_DIR = "objects"
ALARMS_NAME = "alarms.jsonl"
#: Every file a started data directory holds; all or none (see the module docstring).
STATE_FILES = (DB_NAME, QUEUES_NAME, SIGNING_KEY, FORGET_KEY, PRESIGN_KEY, ISSUER_KEY)

INGEST_QUEUE, INGEST_DLQ = "ingest", "ingest-dlq"
EXPORT_QUEUE, EXPORT_DLQ = "export", "export-dlq"
UPLOADS_PREFIX = "uploads/"  # the uploads bucket's notification filter (template.yaml)


class DataDirDamaged(RuntimeError):
    """The data directory's files do not add up to a stack's state, or one of them is damaged:
    refused, never repaired by deleting (a start that guessed would lose acknowledged writes)."""


@dataclass
class Backend:
    """What a running stack holds of its data directory: the Deps and the parts the stack drives."""

    data_dir: Path
    deps: Deps
    queues: Queues
    presigner: Presigner
    buckets: dict[str, DirectoryObjects]
    db: object
    restarted: bool

    def put_object(self, bucket: str, key: str, chunks: Iterator[bytes]) -> tuple[str, int]:
        """Store an object sent through a presigned URL and, for an upload, queue its S3 event (as
        S3's notification to SQS does). Returns (version id, size) once both are durable."""
        store = self.buckets[bucket]
        version, size, digest = store.put_stream(key, chunks)
        if bucket == self.deps.settings.uploads_bucket and key.startswith(UPLOADS_PREFIX):
            self.queues.send(INGEST_QUEUE, json.dumps(s3_event(bucket, key, size, digest, version)))
        return version, size

    def close(self) -> None:
        self.queues.close()
        close = getattr(self.db, "close", None)
        if close is not None:
            close()


def s3_event(
    bucket: str, key: str, size: int, digest: str, version: str, region: str = "us-east-1"
) -> dict[str, object]:
    """The S3 event notification body an ObjectCreated:Put sends to its queue."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": region,
                "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                    "object": {
                        "key": quote_plus(key, safe="/"),
                        "size": size,
                        "eTag": digest[:32],
                        "versionId": version,
                        "sequencer": f"{int(version):016X}",
                    },
                },
            }
        ]
    }


def state_of(data_dir: Path) -> tuple[list[str], list[str]]:
    """(present, missing) of the state files and the objects directory of ``data_dir``."""
    names = (*STATE_FILES, OBJECTS_DIR)
    present = [n for n in names if (data_dir / n).exists()]
    return present, [n for n in names if n not in present]


def open_backend(
    data_dir: Path, settings: Settings, *, fsync: bool = True, check_objects: bool = True
) -> Backend:
    """Open (or, on a first start, create) the backend of ``data_dir``; :class:`DataDirDamaged` when
    its files are incomplete or damaged. The caller holds the data directory's lock."""
    from acx.local.embedded.db import Database, DatabaseDamaged
    from acx.local.embedded.log import SqliteLog
    from acx.local.embedded.tables import SqliteCatalog, SqliteIdempotency, SqliteJobs

    present, missing = state_of(data_dir)
    first = not present
    if present and missing:
        raise DataDirDamaged(
            f"{data_dir} holds a local stack's data ({', '.join(present)}) but not {', '.join(missing)}: "
            "restore them from a backup (or, if this directory never served a request, empty it with "
            "`python -m acx.local.serve --reset`); nothing was created or deleted"
        )
    try:
        signer = FileSigner(data_dir / SIGNING_KEY, create=first)
        ed25519_key(data_dir / ISSUER_KEY, create=first)  # read by the stack's DevIssuer
        keyer = FileKeyer(data_dir / FORGET_KEY, create=first)
        presigner = Presigner(key_bytes(data_dir / PRESIGN_KEY, "presign-hmac", create=first))
        queues = Queues(data_dir / QUEUES_NAME, create=first, fsync=fsync)
        db = Database(data_dir / DB_NAME)
        for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):  # private, as the key files
            if (data_dir / name).exists():
                (data_dir / name).chmod(0o600)
        buckets = {
            name: DirectoryObjects(data_dir / OBJECTS_DIR, name, presigner, fsync=fsync)
            for name in (settings.uploads_bucket, settings.data_bucket, settings.cartridges_bucket)
        }
        if check_objects and not first:
            for store in buckets.values():
                store.check()
    except (KeyFileDamaged, QueueDamaged, DatabaseDamaged, ObjectDamaged) as exc:
        raise DataDirDamaged(f"refused to start on a damaged data directory: {exc}") from exc
    notes = NoteSigner(settings.publisher_id, signer)
    data = buckets[settings.data_bucket]
    deps = Deps(
        settings=settings,
        log=SqliteLog(db, notes.sign, notes.verifier_key(), publisher_id=settings.publisher_id),
        data=data,
        uploads=buckets[settings.uploads_bucket],
        cartridges=buckets[settings.cartridges_bucket],
        jobs=SqliteJobs(db),
        signer=signer,
        forget_keys=keyer,
        queue=QueueSender(queues, EXPORT_QUEUE),
        alarm_topic=AlarmFile(data_dir / ALARMS_NAME),
        idempotency_store=SqliteIdempotency(db),
        catalog_reader=SqliteCatalog(db),
        index_store=DirectorySearchIndex(data),
    )
    return Backend(data_dir, deps, queues, presigner, buckets, db, restarted=not first)


def embedded_deps(data_dir: Path, settings: Settings) -> Deps:
    """Every port of the service on the embedded backend of ``data_dir`` (see :func:`open_backend`)."""
    return open_backend(data_dir, settings).deps
