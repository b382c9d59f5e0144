"""The whole service on one machine: the embedded backend, a local HTTP API, queue pumps, a schedule.

``LocalStack`` runs the unchanged Lambda handlers (``functions/*/app.py``) on the embedded backend
(:mod:`acx.local.embedded`: SQLite, a directory of objects, key files, a SQLite queue) the way AWS
runs them on its services: ``acx.usecases.deps.use`` hands them the backend's ``Deps``; the gateway
invokes the api function per request and serves presigned object URLs; an upload's PUT queues the S3
event, and the queue pumps deliver real SQS events to the ingest and export functions (partial batch
failures honoured, the template's maxReceiveCount then the dead-letter queue); a schedule runs the
verify function. Tests and the demo use it as a context manager::

    with LocalStack(data_dir=path) as stack:
        token = stack.token("demo")
        ...  # HTTP against stack.endpoint
        stack.drain()

One module: ``LocalStack`` is one lifecycle (data directory and its lock, backend, handlers,
gateway, pumps, schedule, then shutdown in reverse) whose steps share its state; the event builders
beside it are what its pumps send.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from acx.local.embedded.compose import (
    ALARMS_NAME,
    DB_NAME,
    EXPORT_DLQ,
    EXPORT_QUEUE,
    INGEST_DLQ,
    INGEST_QUEUE,
    ISSUER_KEY,
    OBJECTS_DIR,
    QUEUES_NAME,
    STATE_FILES,
    Backend,
    DataDirDamaged,
    open_backend,
)
from acx.local.embedded.queue import Message
from acx.local.gateway import ACCOUNT_ID, Gateway, LambdaContext
from acx.local.jwt_issuer import ALL_SCOPES, DevIssuer

__all__ = ["DataDirBusy", "DataDirDamaged", "LocalStack", "default_data_dir", "reset_data_dir"]

Handler = Callable[[dict[str, Any], Any], Any]

LOCK_NAME = "lock"
#: Seconds between an idle queue pump's polls: doubling from MIN to MAX while the queue stays empty
#: (a send wakes the pump at once).
PUMP_IDLE_MIN, PUMP_IDLE_MAX = 0.05, 1.0


@dataclass(frozen=True)
class QueueConfig:
    """A queue as template.yaml declares it: its visibility timeout, redrive count and DLQ."""

    name: str
    function: str
    visibility: int
    max_receives: int
    dlq: str


#: template.yaml's IngestQueue and ExportQueue (tests/unit/local/test_stack.py compares them).
QUEUES = (
    QueueConfig(INGEST_QUEUE, "ingest", 5400, 3, INGEST_DLQ),
    QueueConfig(EXPORT_QUEUE, "export", 1800, 3, EXPORT_DLQ),
)


class DataDirBusy(RuntimeError):
    """Another local stack holds this data directory (two writers would fork its state)."""


def _hold(path: Path) -> Any:
    """The data directory's lock file, flocked; DataDirBusy when another process holds it."""
    import fcntl

    lock = open(path / LOCK_NAME, "a")  # held for the stack's life, closed in close()
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise DataDirBusy(f"{path} is in use by a running local stack: stop it first") from None
    return lock


def default_data_dir() -> Path:
    """$ACX_LOCAL_DATA, else ``.acx-local/`` in the repository (gitignored)."""
    env = os.environ.get("ACX_LOCAL_DATA")
    return Path(env) if env else repo_root() / ".acx-local"


def _ours(name: str) -> bool:
    """A name a data directory holds: its state files, SQLite's side files, the alarm file, the
    objects directory, the lock, a key file's temporary."""
    if name in (*STATE_FILES, OBJECTS_DIR, ALARMS_NAME, LOCK_NAME):
        return True
    if name in (f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{QUEUES_NAME}-journal", f"{DB_NAME}-journal"):
        return True
    return name.startswith(".") and name.endswith(".tmp")


def reset_data_dir(path: Path) -> list[str]:
    """Delete a data directory's files; returns the names removed.

    Refuses a directory that holds anything else, so a mistyped ``--data`` cannot empty a home dir,
    and a directory a running stack holds (:class:`DataDirBusy`): emptying it under the stack would
    leave it answering 201 for writes that no restart can find.
    """
    if not path.exists():
        return []
    names = sorted(p.name for p in path.iterdir())
    unknown = [n for n in names if not _ours(n)]
    if unknown:
        raise ValueError(f"{path} is not an acx local data directory (it holds {unknown[:3]})")
    lock = _hold(path) if (path / LOCK_NAME).exists() else None
    try:
        for name in names:
            if name == LOCK_NAME:
                continue
            if (path / name).is_dir():
                shutil.rmtree(path / name)
            else:
                (path / name).unlink()
        (path / LOCK_NAME).unlink(missing_ok=True)  # last: held until every other file is gone
        path.rmdir()
    finally:
        if lock is not None:
            lock.close()
    return names


def repo_root() -> Path:
    """The repository root: $ACX_ROOT, else the checkout this package is installed from."""
    env = os.environ.get("ACX_ROOT")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4]


def load_module(path: Path, module_name: str) -> ModuleType:
    """Import a function file (``functions/<name>/app.py``: each is its own package) as ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_handler(path: Path, name: str) -> Handler | None:
    """``lambda_handler`` of a function file, imported under a unique module name (None if absent)."""
    if not path.is_file():
        return None
    handler: Handler = load_module(path, f"acx_local_fn_{name}_{uuid.uuid4().hex[:8]}").lambda_handler
    return handler


def sqs_event(messages: Iterable[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda's SQS event source mapping delivers for a batch of received messages."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m.get("Body", ""),
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }


def scheduled_event(region: str, rule: str = "acx-verify-schedule") -> dict[str, Any]:
    """An EventBridge "Scheduled Event", as a schedule rule delivers it to Lambda."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{ACCOUNT_ID}:rule/{rule}"],
        "detail": {},
    }


def _log(msg: str) -> None:
    print(f"[local] {msg}", file=sys.stderr, flush=True)


class LocalStack:
    """Context manager running the embedded backend, the gateway, the queue pumps and the schedule."""

    def __init__(
        self,
        port: int = 0,
        *,
        root: Path | None = None,
        prefix: str = "acx-local",
        region: str = "us-east-1",
        verify_interval: float | None = 300.0,
        batch_size: int = 10,
        function_timeout: float = 30.0,
        retry_delay: int | None = None,
        log_file: Path | None = None,
        quiet: bool = False,
        data_dir: Path | None = None,
        fsync: bool = True,
        read_timeout: float = 60.0,
    ) -> None:
        """``data_dir`` keeps the state durable (docs/LOCAL.md): a restart on the same directory finds
        every acknowledged write, the same keys and valid saved tokens. None = a temporary directory,
        removed at ``close()`` (tests and benches that want a blank stack).

        ``retry_delay`` (seconds) shortens the wait before a failed message is redelivered; None keeps
        the queue's visibility timeout, as in AWS. Tests set it low so poison messages reach the DLQ
        (after maxReceiveCount deliveries) in seconds. ``read_timeout``: seconds any socket read or
        write of a request may take (a stalled body gets 408).
        """
        self.root = root or repo_root()
        self.port = port
        self.prefix = prefix
        self.region = region
        self.verify_interval = verify_interval
        self.batch_size = batch_size
        self.function_timeout = function_timeout
        self.retry_delay = retry_delay
        self.read_timeout = read_timeout
        self.quiet = quiet  # access log lines go to log_file instead of stderr
        self._log_stream: Any = None
        self.log_file = log_file or Path(tempfile.gettempdir()) / f"acx-local-{os.getpid()}.log"
        self.ephemeral = data_dir is None
        self.data_dir: Path | None = Path(data_dir).resolve() if data_dir is not None else None
        self.fsync = fsync
        self.restarted = False  # True when start() found existing state in data_dir
        self._data_lock: Any = None
        self.backend: Backend | None = None
        self._outer_deps: Any = None
        self.issuer = DevIssuer()  # replaced by the data directory's one at start()
        self.env: dict[str, str] = {}
        self.handlers: dict[str, Handler | None] = {}
        self._gateway: Gateway | None = None
        self._saved_env: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._wakes: dict[str, threading.Event] = {q.name: threading.Event() for q in QUEUES}
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._verify_lock = threading.Lock()
        self.errors: list[str] = []

    # -- properties
    @property
    def endpoint(self) -> str:
        """Base URL of the local HTTP API (what ``acx login --local --endpoint`` takes)."""
        if self._gateway is None:
            raise RuntimeError("stack not started")
        return self._gateway.url

    @property
    def deps(self) -> Any:
        """The backend's ``Deps`` (tests read the stores through their ports)."""
        if self.backend is None:
            raise RuntimeError("stack not started")
        return self.backend.deps

    def token(self, tenant: str, scopes: Iterable[str] = ALL_SCOPES, ttl: int = 3600) -> str:
        """A dev JWT the gateway accepts."""
        return self.issuer.issue(tenant, list(scopes), ttl=ttl)

    # -- lifecycle
    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> LocalStack:
        """Start everything; on any failure, tear down what was started and re-raise."""
        try:
            self._open_data_dir()
            self._set_env(
                {
                    "AWS_DEFAULT_REGION": self.region,
                    "AWS_REGION": self.region,
                    "ACX_LOCAL": "1",
                    "POWERTOOLS_TRACE_DISABLED": "true",
                    # Handlers share this process's stdout with the CLI: logs to a file, and no EMF
                    # metric lines (CloudWatch is not here to read them).
                    "ACX_LOG_FILE": str(self.log_file),
                    "POWERTOOLS_METRICS_DISABLED": "true",
                    "POWERTOOLS_METRICS_NAMESPACE": os.environ.get(
                        "POWERTOOLS_METRICS_NAMESPACE", "AcxLocal"
                    ),
                }
            )
            self._reset_process_caches()
            self._open_backend()
            self._load_handlers()
            if self.quiet:
                self._log_stream = open(self.log_file, "a", encoding="utf-8")
            assert self.backend is not None
            self._gateway = Gateway(
                self.handlers.get("api"),
                self.issuer,
                port=self.port,
                region=self.region,
                log_stream=self._log_stream,
                objects=self.backend,
                read_timeout=self.read_timeout,
            )
            # The presigned URLs the functions mint point at the gateway, which checks them.
            self.backend.presigner.endpoint = self._gateway.url
            self._gateway.start()
            self._start_pumps()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the pumps, the schedule and the gateway, close the backend; restore the environment."""
        self._stop.set()
        self._wake_pumps()
        for t in self._threads:
            t.join(timeout=max(10.0, self.function_timeout))
        self._threads.clear()
        if self._gateway is not None:
            self._gateway.stop()
            self._gateway = None
        if self._log_stream is not None:
            self._log_stream.close()
            self._log_stream = None
        from acx.usecases.deps import use

        if self.backend is not None:
            replaced = use(self._outer_deps)  # a stack started inside another hands it back
            if replaced is not self.backend.deps:  # someone else's: leave it in place
                use(replaced)
            self.backend.close()
            self.backend = None
        if self._data_lock is not None:
            self._data_lock.close()  # releases the flock
            self._data_lock = None
        if self.ephemeral and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
        for key, old in self._saved_env.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        self._saved_env.clear()
        self._reset_process_caches()

    def _open_data_dir(self) -> None:
        """Create (0700) and lock the data directory; an ephemeral stack gets a temporary one."""
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="acx-local-"))
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.data_dir, 0o700)
        self._data_lock = _hold(self.data_dir)

    def _open_backend(self) -> None:
        from acx.config import settings
        from acx.usecases.deps import use

        assert self.data_dir is not None
        self.backend = open_backend(self.data_dir, settings(), fsync=self.fsync)
        self.restarted = self.backend.restarted
        released = self.backend.queues.release_all()
        if released:
            _log(f"{released} queued message(s) from before the restart are visible again")
        self.backend.queues.on_send(self._wake)
        self.issuer = DevIssuer.persistent(self.data_dir / ISSUER_KEY)
        self._outer_deps = use(self.backend.deps)

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            if key not in self._saved_env:
                self._saved_env[key] = os.environ.get(key)
            os.environ[key] = value
            self.env[key] = value

    def _reset_process_caches(self) -> None:
        """Drop settings and clients cached by already-imported modules (the environment changed)."""
        cfg = sys.modules.get("acx.config")
        if cfg is not None:
            cfg.settings.cache_clear()
        deps = sys.modules.get("acx.usecases.deps")
        if deps is not None:
            deps.reset()

    def _load_handlers(self) -> None:
        for name in ("api", "ingest", "verify", "export"):
            self.handlers[name] = load_handler(self.root / "functions" / name / "app.py", name)
            if self.handlers[name] is None:
                _log(f"functions/{name}/app.py not found: {name} is disabled")

    # -- queues
    def _start_pumps(self) -> None:
        for queue in QUEUES:
            if self.handlers.get(queue.function) is not None:
                self._spawn(f"pump-{queue.name}", self._pump, queue)
        if self.verify_interval and self.handlers.get("verify") is not None:
            self._spawn("verify-schedule", self._schedule)

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name=f"acx-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    @contextlib.contextmanager
    def _working(self) -> Iterator[None]:
        with self._busy_lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy -= 1

    def _wake(self, queue: str) -> None:
        wake = self._wakes.get(queue)
        if wake is not None:
            wake.set()

    def _wake_pumps(self) -> None:
        for wake in self._wakes.values():
            wake.set()

    def _pump(self, queue: QueueConfig) -> None:
        assert self.backend is not None
        queues = self.backend.queues
        handler = self.handlers[queue.function]
        assert handler is not None
        wake = self._wakes[queue.name]
        idle = PUMP_IDLE_MIN
        while not self._stop.is_set():
            try:
                with self._working():
                    messages = queues.receive(
                        queue.name, self.batch_size, queue.visibility, queue.dlq, queue.max_receives
                    )
                    if messages:
                        self._deliver(queue, handler, messages)
            except Exception as exc:
                if not self._stop.is_set():
                    self._error(f"{queue.name} pump failed: {type(exc).__name__}")
                self._stop.wait(1.0)
                continue
            if messages:
                idle = PUMP_IDLE_MIN
                continue
            if wake.wait(idle):
                wake.clear()
                idle = PUMP_IDLE_MIN
            else:
                idle = min(idle * 2, PUMP_IDLE_MAX)

    def _deliver(self, queue: QueueConfig, handler: Handler, messages: list[Message]) -> None:
        """One batch to the function; the messages it did not report failed are deleted."""
        assert self.backend is not None
        queues = self.backend.queues
        arn = f"arn:aws:sqs:{self.region}:{ACCOUNT_ID}:{self.prefix}-{queue.name}"
        ids = {m.id for m in messages}
        try:
            result = handler(
                sqs_event([m.as_sqs() for m in messages], arn, self.region), self._context(queue.function)
            )
            failed: set[str] = set()
            if isinstance(result, dict):
                failed = {str(f.get("itemIdentifier")) for f in result.get("batchItemFailures") or []}
                if failed - ids:  # Lambda treats an unknown identifier as a failure of the whole batch
                    failed = ids
        except Exception as exc:
            self._error(f"{queue.name} handler raised {type(exc).__name__}; batch returns to the queue")
            failed = ids
        for m in messages:
            if m.id not in failed:
                queues.delete(m.receipt)
            elif self.retry_delay is not None:
                queues.change_visibility(m.receipt, self.retry_delay)

    def _context(self, name: str) -> LambdaContext:
        return LambdaContext(
            function_name=f"{self.prefix}-{name}", region=self.region, timeout_s=self.function_timeout
        )

    def _error(self, message: str) -> None:
        self.errors.append(message)
        _log(message)

    # -- verification
    def _schedule(self) -> None:
        assert self.verify_interval
        while not self._stop.wait(self.verify_interval):
            try:
                self.run_verification_now()
            except Exception as exc:
                self._error(f"scheduled verification raised {type(exc).__name__}")

    def run_verification_now(self) -> Any:
        """Invoke the verify function with a scheduled event now; returns its result."""
        handler = self.handlers.get("verify")
        if handler is None:
            raise RuntimeError("functions/verify/app.py is not available")
        with self._verify_lock, self._working():
            return handler(scheduled_event(self.region), self._context("verify"))

    # -- waiting
    def queue_counts(self, name: str) -> tuple[int, int]:
        """(visible, in flight) messages of one queue (``ingest``, ``ingest-dlq``, ...)."""
        if self.backend is None:
            raise RuntimeError("stack not started")
        return self.backend.queues.counts(name)

    def _queues_empty(self) -> bool:
        return all(self.queue_counts(q.name) == (0, 0) for q in QUEUES)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until the queues are empty and no handler runs; TimeoutError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            with self._busy_lock:
                busy = self._busy
            if busy == 0 and self._queues_empty():
                quiet += 1
                if quiet >= 3:  # stable across polls: nothing was between receive and delete
                    return
            else:
                quiet = 0
            time.sleep(0.05)
        raise TimeoutError(f"local stack did not drain within {timeout}s")
