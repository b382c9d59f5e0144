"""A snapshot of this process's moto: every backend in use, pickled, so a restart need not replay
the whole journal (the journal's compaction, :mod:`acx.local.journal`).

moto keeps its state in plain Python objects (``BackendDict`` -> account -> region -> backend), and
most of them pickle as they are. Three kinds do not, and are carried over by value:

- locks (``threading.Lock``/``RLock``, held by SQS queues, S3 keys, ...): a fresh, unlocked one;
- the ``cryptography`` private keys of KMS keys: their PKCS#8 PEM, loaded back on restore (the
  snapshot, like ``kms-keys.json``, therefore holds private keys: mode 0600, owner only);
- S3 object bodies, which moto keeps in temporary files: moto's own ``FakeKey.__getstate__`` reads
  them into the pickle.

What it does NOT protect against: someone who can write the data directory can put any pickle there,
and loading a pickle runs code. The data directory is the local stack's trust boundary (mode 0700),
as it already is for the journal and the key file.
"""

from __future__ import annotations

import io
import pickle
import threading
from typing import Any, BinaryIO

from acx.core.merge import collector_paused

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _new_lock(kind: str) -> Any:
    return threading.RLock() if kind == "rlock" else threading.Lock()


def _load_private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key(pem, None)


def _load_public_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_public_key(pem)


def _versioned_store(cls: type, lists: dict[str, list[Any]]) -> Any:
    """Rebuild moto's S3 ``_VersionedKeyStore``: its ``__setitem__`` appends a version, so the
    default dict unpickling would nest each key's version list in another list."""
    store = cls()
    for key, versions in lists.items():
        dict.__setitem__(store, key, versions)
    return store


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if type(obj).__name__ == "_VersionedKeyStore" and isinstance(obj, dict):
            return _versioned_store, (type(obj), {k: dict.__getitem__(obj, k) for k in dict.keys(obj)})
        if isinstance(obj, _LOCK_TYPES):
            return _new_lock, ("rlock" if isinstance(obj, _LOCK_TYPES[1]) else "lock",)
        module = type(obj).__module__
        if module.startswith("cryptography."):
            from cryptography.hazmat.primitives import serialization

            if hasattr(obj, "private_bytes"):
                pem = obj.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
                return _load_private_key, (pem,)
            if hasattr(obj, "public_bytes"):
                pem = obj.public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
                return _load_public_key, (pem,)
        return NotImplemented


def _backends() -> list[tuple[str, str, str, Any]]:
    """(service, account, region, backend) for every backend moto created in this process."""
    from moto.backends import get_backend
    from moto.core.base_backend import BackendDict

    out = []
    for backend_dict in list(BackendDict._instances):  # type: ignore[misc]
        name = backend_dict.service_name
        if get_backend(name) is not backend_dict:  # type: ignore[call-overload]
            raise RuntimeError(f"moto backend {name!r} cannot be found again by name: no snapshot")
        for account, region, backend in backend_dict.iter_backends():
            out.append((name, account, region, backend))
    return out


@collector_paused
def dump(fh: BinaryIO) -> None:
    """Pickle every moto backend of this process to ``fh`` (the caller holds the mutation lock).

    With the cyclic collector paused, as :func:`load` is: pickling makes a tuple or two per object
    (its reduce value), and once moto's store is frozen (acx/local/heap.py) the collector's threshold
    for a full collection is counted on the small unfrozen rest, so those temporaries set off full
    collections over and over (a 20,000-record stack, 65 MB snapshot, one process: 4.0 s CPU with the
    collector, 2.6 s paused). Pickling makes no cycles the pause could leave behind."""
    _Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(_backends())


def dumps() -> bytes:
    buf = io.BytesIO()
    dump(buf)
    return buf.getvalue()


@collector_paused
def load(data: bytes) -> int:
    """Put the backends of a snapshot into this process's (reset) moto; returns how many.

    With the cyclic collector paused: unpickling builds the whole store at once, and the collector
    walked it again at each quarter of growth (the same 65 MB snapshot: 8.1 s CPU, 5.0 s paused)."""
    from moto.backends import get_backend

    backends = pickle.loads(data)  # noqa: S301 - our own file in the 0700 data directory (see above)
    for name, account, region, backend in backends:
        per_account = get_backend(name)[account]
        dict.__setitem__(per_account, region, backend)
        if name == "sqs":
            release_in_flight(backend)
    return len(backends)


def release_in_flight(sqs_backend: Any) -> int:
    """Make every message that was in flight when the snapshot was taken visible again; returns how
    many. Its receiver (a queue pump of the stopped stack) is gone, so waiting out its visibility
    timeout would leave, say, a presigned upload pending for that long; as after a replay, the
    handlers treat a message for a finished job as done."""
    released = 0
    for queue in sqs_backend.queues.values():
        for message in queue._messages:  # moto keeps no public setter for a message's visibility
            if not message.visible:
                message.visible_at = 0.0
                released += 1
        queue._pending_messages.clear()  # FIFO groups held by an in-flight message
    return released
