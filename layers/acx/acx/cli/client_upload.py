"""`acx upload`: a bundle, a records array or a package directory, inline up to 5 MiB, presigned
above, then (by default) a wait for ingest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any

from acx.cli.client import (
    EXIT_BLOCKED,
    EXIT_INVALID,
    EXIT_OK,
    CliError,
    _common,
    _poll,
    _print_report,
    _run,
    _send,
    api_from,
    emit_json,
    exit_code_for,
    pkg_path,
    say,
)
from acx.contract import MAX_INLINE_BYTES

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

INLINE_LIMIT = MAX_INLINE_BYTES


class _ProgressReader:
    """A file wrapper that advances a progress bar as http.client reads it block by block."""

    def __init__(self, fh: IO[bytes], bar: Any) -> None:
        self.fh, self.bar = fh, bar

    def read(self, n: int = -1) -> bytes:
        chunk = self.fh.read(n if n and n > 0 else 1 << 16)
        self.bar.advance(len(chunk))
        return chunk


def put_presigned(
    url: str, path: Path, size: int, headers: dict[str, str], show: bool, timeout: float
) -> None:
    """Stream the file to a presigned S3 PUT with the headers the API said to send."""
    hdrs = {str(k): str(v) for k, v in (headers or {}).items()}
    hdrs["Content-Length"] = str(size)
    from acx.cli.progress import bar

    with path.open("rb") as fh, bar("uploading", size, show, unit="bytes") as progress:
        reader = _ProgressReader(fh, progress)
        req = urllib.request.Request(url, data=reader, method="PUT", headers=hdrs)  # type: ignore[arg-type]  # noqa: S310
        status, raw = _send(req, timeout)
    if status >= 300:
        # S3 answers XML; keep only the error code, never the body (it may echo request details)
        code = "s3_error"
        text = raw.decode("utf-8", "replace")
        if "<Code>" in text:
            code = text.split("<Code>", 1)[1].split("</Code>", 1)[0][:64]
        raise CliError(
            "presigned upload refused",
            exit_code_for(status, None),
            status=status,
            code=code,
            path="PUT upload url",
        )


def bundle_input(source: Path, salt_file: str | None = None) -> tuple[Path, int, str, list[Any] | None]:
    """(bundle file, size, what was done, records) for a package directory, a bundle or a records
    array: the one place the CLI turns what a user has into the upload format (docs/FORMATS.md).
    A directory's field-learned records are fingerprinted with ``salt_file`` (default: the
    installation salt of ``acx init``, when it exists)."""
    import tempfile

    from acx.core.bundle import SCHEMA_VERSION, BundleError, parse_bundle
    from acx.core.canonical import CanonicalError, dumps, loads
    from acx.core.packing import pack_directory

    if source.is_dir():
        from acx.cli.offline_core import default_salt_path, read_salt

        salt_path = Path(salt_file) if salt_file else default_salt_path()
        try:
            salt = read_salt(salt_path) if salt_file or salt_path.is_file() else None
            bundle = parse_bundle(pack_directory(source, salt))
        except BundleError as exc:
            raise CliError(f"{source}: {exc.path}: {exc.message}") from None
        except (ValueError, OSError) as exc:
            raise CliError(f"cannot pack {source}: {exc}") from None
        data = bundle.canonical_bytes()
        what = f"packed directory {source} into a bundle ({len(bundle.records)} records)"
        records: list[Any] | None = bundle.records
    else:
        try:
            raw = source.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {source}: {exc.strerror}") from None
        head = raw.lstrip()[:1]
        if head != b"[":
            return source, len(raw), f"bundle {source}", _records_of(raw)
        try:
            items = loads(raw)
        except CanonicalError as exc:
            raise CliError(f"{source}: {exc.path}: {exc.message}") from None
        data = dumps({"schemaVersion": SCHEMA_VERSION, "records": items})
        what = f"wrapped the records array {source} into a bundle ({len(items)} records)"
        records = items
    fd, name = tempfile.mkstemp(prefix="acx-bundle-", suffix=".json")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return Path(name), len(data), what, records


def _records_of(raw: bytes) -> list[Any] | None:
    """The records of a bundle the user sent (to name the record an error path points at), if cheap."""
    if len(raw) > INLINE_LIMIT:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    records = doc.get("records") if isinstance(doc, dict) else None
    return records if isinstance(records, list) else None


def _name_record(exc: CliError, records: list[Any] | None) -> CliError:
    """Add the record's id to an error whose path is ``$.records[i]...``."""
    import re

    m = re.match(r"^\$\.records\[(\d+)\]", exc.path or "")
    if m and records is not None and int(m.group(1)) < len(records):
        record = records[int(m.group(1))]
        rid = record.get("id") if isinstance(record, dict) else None
        if isinstance(rid, str) and len(rid) <= 128:
            exc.message += f" [record {m.group(1)}, id {rid}]"
    return exc


def cmd_upload(args: argparse.Namespace) -> int:
    """Upload a bundle, a records array or a package directory: inline up to 5 MiB, presigned above;
    then (by default) wait for ingest."""
    path, size, what, records = bundle_input(Path(args.bundle), args.salt_file)
    temporary = path != Path(args.bundle)
    try:
        if not args.json:
            print(f"  {what}, {size} bytes", file=sys.stderr)
        return _upload(args, path, size, records)
    except CliError as exc:
        raise _name_record(exc, records) from None
    finally:
        if temporary:
            path.unlink(missing_ok=True)


def _upload(args: argparse.Namespace, path: Path, size: int, records: list[Any] | None) -> int:
    from acx.cli.progress import wanted

    api = api_from(args)
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else {}
    if size <= INLINE_LIMIT and not args.presigned:
        _, out = api.call(
            "POST",
            pkg_path(args.package, "bundles"),
            data=path.read_bytes(),
            headers={"Content-Type": "application/json", **headers},
        )
        if args.json:
            emit_json(out)
        else:
            say(_summary_line(out))
        return EXIT_OK
    _, up = api.call("POST", pkg_path(args.package, "uploads"), json_body={"size": size}, headers=headers)
    max_bytes = up.get("maxBytes")
    if isinstance(max_bytes, int) and size > max_bytes:
        raise CliError(f"{path} is {size} bytes; uploads are limited to {max_bytes}")
    show = wanted(args)
    put_presigned(up["url"], path, size, up.get("headers") or {}, show, timeout=max(api.timeout, 600))
    upload_id = up["uploadId"]
    if not args.wait:
        result = {"uploadId": upload_id, "status": "pending"}
        if args.json:
            emit_json(result)
        else:
            say(
                f"uploaded {size} bytes as upload {upload_id}; ingest runs asynchronously "
                f"(`acx uploads --package {args.package}` shows its state)"
            )
        return EXIT_OK
    status = _poll(
        api,
        pkg_path(args.package, "uploads", upload_id),
        lambda b: isinstance(b, dict) and b.get("status") in ("ingested", "rejected"),
        args.timeout,
        f"ingest of upload {upload_id}",
        show,
    )
    if args.json:
        emit_json(status)
    if status.get("status") == "rejected":
        err = status.get("error") if isinstance(status.get("error"), dict) else {}
        code = str(err.get("code") or ("blocked" if status.get("report") else "rejected"))
        if not args.json:
            print(
                f"error rejected {code}: {err.get('message') or 'the bundle was refused'}"
                + (f" (at {err['path']})" if err.get("path") else ""),
                file=sys.stderr,
            )
            if status.get("report"):
                _print_report(status["report"])
        return EXIT_BLOCKED if code == "blocked" else EXIT_INVALID
    if not args.json:
        say(f"upload {upload_id} ingested: " + _summary_line(status.get("summary") or {}))
    return EXIT_OK


def _summary_line(s: dict[str, Any]) -> str:
    log = s.get("log") or {}
    seq = (
        f"; log seq {log.get('fromSeq')}..{log.get('toSeq')}"
        if log.get("toSeq") is not None
        else "; nothing appended to the log"
    )
    return (
        f"accepted {s.get('accepted', 0)}, merged {s.get('merged', 0)}, unchanged {s.get('unchanged', 0)}, "
        f"refused {s.get('refused', 0)}{seq}"
    )


def register(subparsers: Any) -> None:
    """Add the upload commands to the ``acx`` parser."""
    p = subparsers.add_parser(
        "upload", help="upload a bundle, a records array or a package directory (inline or presigned)"
    )
    p.add_argument("bundle", help="bundle JSON file, records-array JSON file, or agent-package directory")
    p.add_argument(
        "--wait",
        dest="wait",
        action="store_true",
        default=True,
        help="wait for a presigned upload to be ingested (default)",
    )
    p.add_argument("--no-wait", dest="wait", action="store_false")
    p.add_argument("--idempotency-key", help="retries with the same key write nothing twice")
    p.add_argument(
        "--salt-file",
        help="installation salt for a directory's field-learned records (default $ACX_SALT_FILE or "
        "~/.config/acx/salt, where `acx init` writes it)",
    )
    p.add_argument("--presigned", action="store_true", help="use the presigned path even when small")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for ingest")
    _common(p)
    p.set_defaults(func=_run(cmd_upload))
