"""The whole service on one machine: moto for AWS, a local HTTP API, SQS pumps and the verify schedule.

``LocalStack`` wires the unchanged Lambda handlers (``functions/*/app.py``) to moto the way AWS wires
them to the real services: the gateway invokes the api function per request, the ingest and export
queues are polled into their functions with real SQS events (partial batch failures honoured, so
moto's redrive moves poison messages to the DLQ), and an EventBridge-style schedule runs the verify
function. Tests and the demo use it as a context manager::

    with LocalStack() as stack:
        token = stack.token("demo")
        ...  # HTTP against stack.endpoint
        stack.drain()

One module: ``LocalStack`` is one lifecycle (data directory, moto, resources,
handlers, pumps, schedule, then shutdown in reverse) whose steps share its state; the event builders
beside it are what its pumps send.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from acx.local import journal, moto_dynamodb, moto_ed25519
from acx.local.gateway import ACCOUNT_ID, Gateway, LambdaContext
from acx.local.heap import StoreFreezer
from acx.local.journal import COMPACT_BYTES, KEYS_NAME, is_state_file
from acx.local.jwt_issuer import ALL_SCOPES, DevIssuer

Handler = Callable[[dict[str, Any], Any], Any]

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
_FAKE_KW = {k.lower(): v for k, v in FAKE_CREDENTIALS.items()}  # moto accepts any credentials


#: Files of a data directory (docs/LOCAL.md): the stack's resource names, the dev issuer's key, a lock.
STATE_NAME = "stack.json"
ISSUER_KEY = "issuer-key.pem"
LOCK_NAME = "lock"
#: Present from the first moment of a data directory's first start until its stack.json is written:
#: the one case in which a start throws files away (nothing was acknowledged from them yet).
CREATING_NAME = "creating"


_TRANSPORT_ID = "acx-local-in-process-moto"
#: Seconds between an idle queue pump's polls: doubling from MIN to MAX while the queue stays empty.
PUMP_IDLE_MIN, PUMP_IDLE_MAX = 0.1, 0.5


class DataDirBusy(RuntimeError):
    """Another local stack holds this data directory (two writers would fork its journal)."""


class DataDirDamaged(RuntimeError):
    """The data directory's files do not add up to a stack's state: refused, never repaired by
    deleting (a start that guessed would lose acknowledged writes)."""


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


def reset_data_dir(path: Path) -> list[str]:
    """Delete a data directory's files (journal, keys, state); returns the names removed.

    Refuses a directory that holds anything else, so a mistyped ``--data`` cannot empty a home dir,
    and a directory a running stack holds (:class:`DataDirBusy`): emptying it under the stack would
    leave it answering 201 for writes that no restart can find.
    """
    known = {KEYS_NAME, STATE_NAME, ISSUER_KEY, LOCK_NAME, CREATING_NAME}
    if not path.exists():
        return []
    names = sorted(p.name for p in path.iterdir())
    unknown = [n for n in names if n not in known and not is_state_file(n) and not n.endswith(".tmp")]
    if unknown:
        raise ValueError(f"{path} is not an acx local data directory (it holds {unknown[:3]})")
    lock = _hold(path) if (path / LOCK_NAME).exists() else None
    try:
        for name in names:
            if name != LOCK_NAME:
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


def free_port() -> int:
    """An unused TCP port on 127.0.0.1 (for the moto subprocess, which must be told its port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    records = []
    for m in messages:
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m.get("Body", ""),
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {
                    k: {
                        "stringValue": v.get("StringValue"),
                        "binaryValue": v.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": v.get("DataType", "String"),
                    }
                    for k, v in (m.get("MessageAttributes") or {}).items()
                },
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


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
    """Context manager running moto, the gateway, the queue pumps and the verify schedule."""

    def __init__(
        self,
        port: int = 0,
        *,
        root: Path | None = None,
        template_path: Path | None = None,
        prefix: str = "acx-local",
        region: str = "us-east-1",
        verify_interval: float | None = 300.0,
        isolated_moto: bool = False,
        batch_size: int = 10,
        function_timeout: float = 30.0,
        retry_delay: int | None = None,
        log_file: Path | None = None,
        quiet: bool = False,
        data_dir: Path | None = None,
        fsync: bool = True,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        """``isolated_moto`` runs moto in a child process, safe from ``mock_aws`` resets here.

        ``data_dir`` keeps the state durable (see :mod:`acx.local.journal` and docs/LOCAL.md): moto's
        journal, the KMS key material and the dev issuer's key live there and a restart on the same
        directory finds every acknowledged write, the same key ids and valid saved tokens. None =
        in memory only, gone at ``close()`` (tests and benches that want a blank stack).

        ``retry_delay`` (seconds) shortens the wait before a failed SQS message is redelivered; None
        keeps the queue's visibility timeout, as in AWS. Tests set it low so poison messages reach
        the DLQ (after maxReceiveCount deliveries) in seconds.
        """
        self.root = root or repo_root()
        self.template_path = template_path or self.root / "template.yaml"
        self.port = port
        self.prefix = prefix
        self.region = region
        self.verify_interval = verify_interval
        self.isolated_moto = isolated_moto
        self.batch_size = batch_size
        self.function_timeout = function_timeout
        self.retry_delay = retry_delay
        self.quiet = quiet  # access log lines go to log_file instead of stderr
        self._log_stream: Any = None
        self.log_file = log_file or Path(tempfile.gettempdir()) / f"acx-local-{os.getpid()}.log"
        self.data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.fsync = fsync
        self.compact_bytes = compact_bytes  # journal bytes after which a running stack compacts
        self.restarted = False  # True when start() found existing state in data_dir
        self._data_lock: Any = None
        self._transport_session: Any = None
        self._heap: StoreFreezer | None = None
        self.issuer = DevIssuer()  # with a data_dir: replaced by the persistent one at start()
        self.env: dict[str, str] = {}
        self.handlers: dict[str, Handler | None] = {}
        self._moto: Any = None
        self._moto_proc: subprocess.Popen[bytes] | None = None
        self._moto_endpoint = ""
        self._gateway: Gateway | None = None
        self._saved_env: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._wakes: list[threading.Event] = []  # one per queue pump: a forwarded S3 write sets them
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._verify_lock = threading.Lock()
        self._queues: dict[str, tuple[str, str]] = {}  # name -> (url, arn)
        self._clients: dict[str, Any] = {}
        self.errors: list[str] = []

    # -- properties
    @property
    def endpoint(self) -> str:
        """Base URL of the local HTTP API (what ``acx login --local --endpoint`` takes)."""
        if self._gateway is None:
            raise RuntimeError("stack not started")
        return self._gateway.url

    @property
    def moto_endpoint(self) -> str:
        return self._moto_endpoint

    def token(self, tenant: str, scopes: Iterable[str] = ALL_SCOPES, ttl: int = 3600) -> str:
        """A dev JWT the gateway accepts."""
        return self.issuer.issue(tenant, list(scopes), ttl=ttl)

    def client(self, service: str) -> Any:
        """A boto3 client pointed at this stack's moto (tests use it to inspect or tamper)."""
        c = self._clients.get(service)
        if c is None:
            import boto3
            from botocore.config import Config

            cfg = Config(
                signature_version="s3v4" if service == "s3" else None,
                s3={"addressing_style": "path"} if service == "s3" else None,
            )
            c = self._clients[service] = boto3.client(
                service,
                region_name=self.region,
                endpoint_url=self._moto_endpoint,
                **_FAKE_KW,
                config=cfg,
            )
        return c

    # -- lifecycle
    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> LocalStack:
        """Start everything; on any failure, tear down what was started and re-raise."""
        try:
            self._open_data_dir()
            self._start_moto()
            self._set_env(
                {
                    **FAKE_CREDENTIALS,
                    "AWS_ENDPOINT_URL": self._moto_endpoint,
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
            self._create_resources()
            self._reset_process_caches()
            self._load_handlers()
            if self.quiet:
                self._log_stream = open(self.log_file, "a", encoding="utf-8")
            self._gateway = Gateway(
                self.handlers.get("api"),
                self.issuer,
                port=self.port,
                region=self.region,
                log_stream=self._log_stream,
                s3_backend=self._moto_endpoint,
                s3_buckets=self._bucket_names(),
                credentials=(
                    FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                    FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                ),
                on_s3_write=self._wake_pumps,
            ).start()
            # The functions reach S3 through the gateway, so the presigned URLs they mint point at it
            # and are checked there (moto checks no signature): the tenant boundary holds locally.
            self._set_env({"AWS_ENDPOINT_URL_S3": self._gateway.url})
            self._install_transport()
            self._reset_process_caches()
            self._start_pumps()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop threads, the gateway and moto; restore the environment."""
        self._stop.set()
        self._wake_pumps()
        for t in self._threads:
            t.join(timeout=10)
        self._threads.clear()
        if self._gateway is not None:
            self._gateway.stop()
            self._gateway = None
        if self._log_stream is not None:
            self._log_stream.close()
            self._log_stream = None
        if self._transport_session is not None:
            self._transport_session.events.unregister("before-send", unique_id=_TRANSPORT_ID)
            from acx.local import botocore_fast, direct_call

            botocore_fast.uninstall(self._transport_session.events)
            direct_call.uninstall(self._transport_session.events)
            self._transport_session = None
        if self._heap is not None:
            self._heap.close()
            self._heap = None
        if self._moto is not None and getattr(self._moto, "journal_app", None) is not None:
            try:
                self._moto.journal_app.close(compact=True)  # a clean stop: snapshot, fast next start
            except Exception as exc:  # the journal still holds everything: the next start replays it
                self._error(f"compaction at stop failed: {type(exc).__name__}: {exc}")
        if self._moto is not None:
            with contextlib.suppress(Exception):
                self._moto.shutdown()
                self._moto.server_close()
            self._moto = None
        if self._moto_proc is not None:
            self._moto_proc.terminate()
            try:
                self._moto_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._moto_proc.kill()
            self._moto_proc = None
        if self._data_lock is not None:
            self._data_lock.close()  # releases the flock
            self._data_lock = None
        for key, old in self._saved_env.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        self._saved_env.clear()
        self._reset_process_caches()

    def _open_data_dir(self) -> None:
        """Create/lock the data directory; a directory whose first start never finished is emptied."""
        if self.data_dir is None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.data_dir, 0o700)
        self._data_lock = _hold(self.data_dir)
        self.restarted = (self.data_dir / STATE_NAME).is_file()
        if self.restarted:
            return self._load_issuer()
        state = [p for p in self.data_dir.iterdir() if p.name == KEYS_NAME or is_state_file(p.name)]
        if state and not (self.data_dir / CREATING_NAME).exists():
            # The files of a stack that started before, without its stack.json: never read as a
            # first start (which would delete them), never guessed at.
            names = ", ".join(sorted(p.name for p in state)[:3])
            raise DataDirDamaged(
                f"{self.data_dir} holds a local stack's data ({names}) "
                f"but no {STATE_NAME}: restore {STATE_NAME} from a backup, or empty the directory with "
                "`python -m acx.local.serve --reset` (this loses its data)"
            )
        # A first start, or one that never finished: nothing was ever acknowledged from these files
        # (the gateway starts after STATE_NAME is written), so they are thrown away rather than
        # replayed into duplicates.
        (self.data_dir / CREATING_NAME).touch()
        journal.fsync_dir(self.data_dir)
        for path in state:
            path.unlink(missing_ok=True)
        self._load_issuer()

    def _load_issuer(self) -> None:
        assert self.data_dir is not None
        self.issuer = DevIssuer.persistent(self.data_dir / ISSUER_KEY)

    def _start_moto(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request lines from moto
        data = str(self.data_dir) if self.data_dir is not None else None
        if self.isolated_moto:
            port = free_port()
            code = (
                "import sys\nfrom acx.local.stack import _serve_moto\n"
                f"_serve_moto({port}, {data!r}, {self.fsync!r}, {self.compact_bytes!r})\n"
            )
            self._moto_proc = subprocess.Popen([sys.executable, "-c", code])  # noqa: S603
            self._moto_endpoint = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + (30 if data is None else 900)  # replaying a long journal
            while True:
                try:
                    urllib.request.urlopen(self._moto_endpoint + "/moto-api/data.json", timeout=1).close()  # noqa: S310
                    break
                except OSError:
                    if self._moto_proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("moto server did not start") from None
                    time.sleep(0.05)
            return
        moto_ed25519.install()
        moto_dynamodb.install()
        self._moto = journal.serve(self.data_dir, 0, fsync=self.fsync, compact_bytes=self.compact_bytes)
        host, port = self._moto.server_address[:2]
        self._moto_endpoint = f"http://{host}:{port}"

    def _install_transport(self) -> None:
        """With moto in this process, boto3 clients made from now on call it without HTTP."""
        if self._moto is None or self._gateway is None:
            return
        import boto3

        prefixes = (self._moto_endpoint + "/", *(f"{self._gateway.url}/{b}/" for b in self._bucket_names()))
        self._heap = StoreFreezer()  # moto's stored items kept out of the collector: acx/local/heap.py
        hook = journal.InProcessTransport(
            self._moto.wsgi_app, prefixes, self._moto_endpoint + "/", self._heap
        )
        self._transport_session = boto3._get_default_session()
        self._transport_session.events.register("before-send", hook, unique_id=_TRANSPORT_ID)
        from acx.local import botocore_fast, direct_call

        botocore_fast.install(self._transport_session.events)  # acx/local/botocore_fast.py
        direct = direct_call.DirectDynamoDB(hook._dynamodb, self._moto_endpoint + "/")
        direct_call.install(self._transport_session.events, direct)  # acx/local/direct_call.py

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            if key not in self._saved_env:
                self._saved_env[key] = os.environ.get(key)
            os.environ[key] = value
            self.env[key] = value

    def _reset_process_caches(self) -> None:
        """Drop settings and boto3 clients cached by already-imported modules (endpoint changed)."""
        cfg = sys.modules.get("acx.config")
        if cfg is not None:
            cfg.settings.cache_clear()
        aws = sys.modules.get("acx.adapters.aws")
        if aws is not None:
            aws.reset()
        deps = sys.modules.get("acx.usecases.deps")
        if deps is not None and hasattr(deps.deps, "cache_clear"):
            deps.deps.cache_clear()

    def _create_resources(self) -> None:
        """Create the template's resources, or, on a restart, read back the names created before."""
        from acx.local.resources import create_from_template

        state = self.data_dir / STATE_NAME if self.data_dir is not None else None
        if state is not None and state.is_file():
            saved = json.loads(state.read_text(encoding="utf-8"))
            old = str(saved["motoEndpoint"])
            # Queue URLs carry moto's address, which changes per run; names and ARNs do not.
            env = {k: str(v).replace(old, self._moto_endpoint) for k, v in saved["env"].items()}
            self._set_env(env)
            return
        clients = {s: self.client(s) for s in ("dynamodb", "s3", "sqs", "kms", "sns")}
        env = create_from_template(
            self.template_path,
            clients,
            region=self.region,
            prefix=self.prefix,
            endpoint_url=self._moto_endpoint,
        )
        self._set_env({k: str(v) for k, v in env.items()})
        if state is not None:
            doc = {"motoEndpoint": self._moto_endpoint, "env": {k: str(v) for k, v in env.items()}}
            journal.write_private(state, json.dumps(doc, indent=1, sort_keys=True).encode())
            (state.parent / CREATING_NAME).unlink(missing_ok=True)  # the first start is complete
            journal.fsync_dir(state.parent)

    def _bucket_names(self) -> tuple[str, ...]:
        """The stack's S3 buckets (the gateway proxies path-style requests for these to moto)."""
        names = {v for k, v in self.env.items() if k.endswith("_BUCKET") and v}
        return tuple(sorted(names))

    def _load_handlers(self) -> None:
        for name in ("api", "ingest", "verify", "export"):
            self.handlers[name] = load_handler(self.root / "functions" / name / "app.py", name)
            if self.handlers[name] is None:
                _log(f"functions/{name}/app.py not found: {name} is disabled")

    # -- queues
    def _start_pumps(self) -> None:
        sqs = self.client("sqs")
        for name, var in (
            ("ingest", "INGEST_QUEUE_URL"),
            ("export", "EXPORT_QUEUE_URL"),
            ("dlq", "INGEST_DLQ_URL"),
        ):
            url = self.env.get(var)
            if not url:
                continue
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            self._queues[name] = (url, arn)
        for name in ("ingest", "export"):
            if name in self._queues and self.handlers.get(name) is not None:
                self._spawn(f"pump-{name}", self._pump, name)
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

    def _pump(self, name: str) -> None:
        import boto3

        # A client of its own per pump thread; polls are short so shutdown is prompt.
        sqs = boto3.client(
            "sqs",
            region_name=self.region,
            endpoint_url=self._moto_endpoint,
            **_FAKE_KW,
        )
        url, arn = self._queues[name]
        handler = self.handlers[name]
        assert handler is not None
        wake = threading.Event()
        self._wakes.append(wake)
        idle = PUMP_IDLE_MIN
        while not self._stop.is_set():
            try:
                resp = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=self.batch_size,
                    WaitTimeSeconds=0,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except Exception as exc:
                if not self._stop.is_set():
                    self._error(f"{name} receive failed: {type(exc).__name__}")
                self._stop.wait(1.0)
                continue
            messages = resp.get("Messages") or []
            if not messages:
                # An idle pump polls less and less often (each poll is a few ms of CPU taken from a
                # running ingest), up to PUMP_IDLE_MAX; an upload's PUT wakes it at once.
                if wake.wait(idle):
                    wake.clear()
                    idle = PUMP_IDLE_MIN
                else:
                    idle = min(idle * 2, PUMP_IDLE_MAX)
                continue
            idle = PUMP_IDLE_MIN
            # Received messages are invisible in the queue until deleted, and the handler runs under
            # _working(), so drain() never sees "idle" while a batch is in flight.
            with self._working():
                self._deliver(sqs, name, url, arn, handler, messages)

    def _wake_pumps(self) -> None:
        for wake in list(self._wakes):
            wake.set()

    def _deliver(
        self, sqs: Any, name: str, url: str, arn: str, handler: Handler, messages: list[dict[str, Any]]
    ) -> None:
        ids = {m["MessageId"] for m in messages}
        try:
            result = handler(sqs_event(messages, arn, self.region), self._context(name))
            failed = set()
            if isinstance(result, dict):
                failed = {str(f.get("itemIdentifier")) for f in result.get("batchItemFailures") or []}
                if failed - ids:  # Lambda treats an unknown identifier as a failure of the whole batch
                    failed = ids
        except Exception as exc:
            self._error(f"{name} handler raised {type(exc).__name__}; batch returns to the queue")
            failed = ids
        if failed and self.retry_delay is not None:
            for m in messages:
                if m["MessageId"] in failed:
                    with contextlib.suppress(Exception):
                        sqs.change_message_visibility(
                            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=self.retry_delay
                        )
        done = [m for m in messages if m["MessageId"] not in failed]
        for i in range(0, len(done), 10):
            entries = [
                {"Id": str(j), "ReceiptHandle": m["ReceiptHandle"]} for j, m in enumerate(done[i : i + 10])
            ]
            sqs.delete_message_batch(QueueUrl=url, Entries=entries)

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
    def _queues_empty(self) -> bool:
        sqs = self.client("sqs")
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        for qname, (url, _) in self._queues.items():
            if qname == "dlq":
                continue
            attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
            if any(int(attrs.get(n, 0)) for n in names):
                return False
        return True

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


def _serve_moto(
    port: int, data_dir: str | None = None, fsync: bool = True, compact_bytes: int = COMPACT_BYTES
) -> None:
    """Entry point of the isolated moto child process (see ``LocalStack(isolated_moto=True)``).
    SIGTERM (the parent's clean close) compacts the journal; the parent's death does not."""
    import signal

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    moto_ed25519.install()
    moto_dynamodb.install()
    parent = os.getppid()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = journal.serve(
        Path(data_dir) if data_dir else None, port, fsync=fsync, compact_bytes=compact_bytes
    )
    try:
        while os.getppid() == parent and not stop.wait(0.5):  # exit with the parent, never linger
            pass
    except KeyboardInterrupt:
        pass
    server.shutdown()
    if server.journal_app is not None and stop.is_set():
        server.journal_app.close(compact=True)
