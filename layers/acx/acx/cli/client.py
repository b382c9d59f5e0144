"""`acx` commands that talk to the service API: login, whoami, logout, upload, recall, forget,
export, download, log (the list commands are in :mod:`acx.cli.client_lists`).

HTTP goes through the standard library's ``urllib`` only, and heavy modules are imported inside the
commands, so the CLI stays quick to start. Every command prints raw JSON on stdout with ``--json`` and
human text otherwise; failures print ``error <status> <code>: <message> (at <path>)`` on stderr,
followed by what to do (``acx.contract.HINTS``).

Configuration: ``$ACX_CONFIG`` (default ``~/.config/acx/config.json``, written by ``acx login``)
holds the endpoint, token, tenant, scopes, expiry and a default package; ``ACX_ENDPOINT``,
``ACX_TOKEN`` and ``ACX_PACKAGE`` override it in every command.

Exit codes: 0 ok, 2 invalid input or any other 4xx, 3 blocked by the scrub gate (422 ``blocked``),
4 verification failed or a corrupt store, 5 server or network error (and timeouts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any

from acx.contract import (
    ERR_BLOCKED,
    ERR_TOKEN_EXPIRED,
    EXIT_BLOCKED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_TAMPERED,
    HINTS,
    MAX_INLINE_BYTES,
    RECALL_MAX_LIMIT,
    SCOPES,
    is_package_id,
)

INLINE_LIMIT = MAX_INLINE_BYTES
ALL_SCOPES = SCOPES
USER_AGENT = "acx-cli/1"
__all__ = ["EXIT_BLOCKED", "EXIT_INVALID", "EXIT_OK", "EXIT_SERVER", "EXIT_TAMPERED"]


class CliError(Exception):
    """A failure to report on stderr with an exit code (and, for API errors, the error body)."""

    def __init__(
        self,
        message: str,
        exit_code: int = EXIT_INVALID,
        *,
        status: int | None = None,
        code: str | None = None,
        path: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.status = status
        self.code = code
        self.path = path
        self.body = body

    def line(self) -> str:
        """The stderr lines a user sees: the error, then what to do about it."""
        if self.status is not None:
            where = f" (at {self.path})" if self.path else ""
            text = f"error {self.status} {self.code or 'error'}: {self.message}{where}"
        else:
            text = f"error: {self.message}"
        hint = HINTS.get(self.code or "")
        return text + (f"\n  hint: {hint}" if hint and hint not in self.message else "")


def exit_code_for(status: int, code: str | None) -> int:
    """Exit code of an HTTP error: blocked -> 3, other 4xx -> 2, 5xx -> 5."""
    if status == 422 and code == ERR_BLOCKED:
        return EXIT_BLOCKED
    if 400 <= status < 500:
        return EXIT_INVALID
    return EXIT_SERVER


# -- configuration -----------------------------------------------------------------------------------


def config_path() -> Path:
    """$ACX_CONFIG, else ~/.config/acx/config.json."""
    env = os.environ.get("ACX_CONFIG")
    return Path(env) if env else Path.home() / ".config" / "acx" / "config.json"


def load_config() -> dict[str, Any]:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read config {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def save_config(data: dict[str, Any]) -> Path:
    """Write the config readable by the owner only (0600): it holds a bearer token."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


# -- HTTP --------------------------------------------------------------------------------------------


class Api:
    """A tiny JSON client for the service API (bearer token, error mapping, timeouts)."""

    def __init__(self, endpoint: str, token: str | None, timeout: float = 60.0) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        q = {k: v for k, v in (query or {}).items() if v is not None}
        return self.endpoint + path + ("?" + urllib.parse.urlencode(q) if q else "")

    def call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        json_body: Any = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[int, Any]:
        """(status, parsed JSON body) for a 2xx answer; raises :class:`CliError` otherwise."""
        hdrs = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        if json_body is not None:
            data = json.dumps(json_body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
        if auth and self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        url = self.url(path, query)
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)  # noqa: S310
        status, raw = _send(req, self.timeout)
        if status >= 400:
            raise http_error(status, raw, path)
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            raise CliError(f"server answered {status} with a body that is not JSON", EXIT_SERVER) from None


def _send(req: urllib.request.Request, timeout: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - endpoint chosen by the user
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as err:
        try:
            raw = err.read()
        except OSError:
            raw = b""
        return int(err.code), raw
    except urllib.error.URLError as err:
        raise CliError(f"cannot reach {req.full_url.split('?')[0]}: {err.reason}", EXIT_SERVER) from None
    except (TimeoutError, ConnectionError, OSError) as err:
        raise CliError(f"network error talking to {req.full_url.split('?')[0]}: {err}", EXIT_SERVER) from None


def http_error(status: int, raw: bytes, path: str) -> CliError:
    """A CliError from an error answer: the API's ``{"error": {...}}`` or the gateway's ``{"message"}``."""
    body: Any = None
    code, message, where = None, f"HTTP {status}", None
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        code = str(err.get("code") or "") or None
        message = str(err.get("message") or message)
        where = err.get("path")
    elif isinstance(body, dict) and "message" in body:
        # AWS's HTTP API answers its own refusals (authorizer, routing, payload limit) this way
        message = str(body["message"])
        gateway_codes = {401: "unauthorized", 403: "forbidden", 404: "no_such_route", 413: "body_too_large"}
        code = gateway_codes.get(status)
    return CliError(
        message,
        exit_code_for(status, code),
        status=status,
        code=code or "error",
        path=str(where) if where else path,
        body=body,
    )


def _expired(expires_at: Any, now: float | None = None) -> bool:
    """True when the stored ``expiresAt`` (RFC 3339, ``Z``) is in the past."""
    import datetime as dt

    if not isinstance(expires_at, str) or not expires_at:
        return False
    try:
        moment = dt.datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return moment.timestamp() <= (time.time() if now is None else now)


def api_from(args: argparse.Namespace) -> Api:
    """The API client for the logged-in endpoint (ACX_ENDPOINT / ACX_TOKEN override the config).

    A stored token past its ``expiresAt`` is refused here, before any request, with what to do."""
    cfg = load_config()
    endpoint = os.environ.get("ACX_ENDPOINT") or cfg.get("endpoint")
    env_token = os.environ.get("ACX_TOKEN")
    token = env_token or cfg.get("token")
    if not endpoint:
        raise CliError("not logged in: run `acx login --endpoint URL --token TOKEN` (or --local)")
    if not env_token and token and _expired(cfg.get("expiresAt")):
        raise CliError(
            f"the stored token expired at {cfg['expiresAt']}: run `acx login` again",
            status=401,
            code=ERR_TOKEN_EXPIRED,
        )
    return Api(str(endpoint), str(token) if token else None, timeout=float(getattr(args, "http_timeout", 60)))


def package_of(args: argparse.Namespace) -> str:
    """--package, else $ACX_PACKAGE, else the default package saved by `acx login --package`."""
    package = getattr(args, "package", None) or os.environ.get("ACX_PACKAGE") or load_config().get("package")
    if not package:
        raise CliError(
            "no package: pass --package PKG, set ACX_PACKAGE, "
            "or save a default with `acx login --package PKG`"
        )
    if not is_package_id(package):
        raise CliError(
            f"package id {package!r} is not valid: "
            "1-64 characters of [a-z0-9-], starting with a letter or digit"
        )
    args.package = str(package)
    return str(package)


def pkg_path(package: str, *rest: str) -> str:
    parts = [urllib.parse.quote(package, safe="")] + [urllib.parse.quote(p, safe="") for p in rest]
    return "/v1/packages/" + "/".join(parts)


# -- output ------------------------------------------------------------------------------------------


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _run(fn: Any) -> Any:
    """Wrap a command: map CliError to its stderr line, JSON error body (with --json) and exit code."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            if getattr(args, "needs_package", False):
                package_of(args)
            return int(fn(args) or 0)
        except CliError as exc:
            if getattr(args, "json", False) and exc.body is not None:
                emit_json(exc.body)
            print(exc.line(), file=sys.stderr)
            report = exc.body.get("report") if isinstance(exc.body, dict) else None
            if report and not getattr(args, "json", False):
                _print_report(report)
            return exc.exit_code

    wrapper.__doc__ = fn.__doc__
    return wrapper


def _print_report(report: Any) -> None:
    """Scrub/validation findings: where, offset and rule; the server never sends the secret itself."""
    findings = report.get("findings") if isinstance(report, dict) else report
    if not isinstance(findings, list):
        print(f"  report: {json.dumps(report)[:2000]}", file=sys.stderr)
        return
    for f in findings[:50]:
        if isinstance(f, dict):
            # "record:<id>" or "file:<path>" (a knowledge or skill file) from the gate
            where = f.get("location") or f.get("recordId") or f.get("file") or ""
            bits = [
                str(where).replace("record:", "record ", 1).replace("file:", "file ", 1),
                str(f.get("path") or ""),
                f"offset {f.get('offset')}" if "offset" in f else "",
                str(f.get("rule") or f.get("ruleId") or f.get("code") or ""),
            ]
            print("  - " + "  ".join(b for b in bits if b), file=sys.stderr)
        else:
            print(f"  - {f}", file=sys.stderr)
    if len(findings) > 50:
        print(f"  ... and {len(findings) - 50} more", file=sys.stderr)


# -- commands ----------------------------------------------------------------------------------------


def cmd_login(args: argparse.Namespace) -> int:
    """Store the endpoint and a token; --local asks the local gateway's dev issuer for one."""
    endpoint = args.endpoint.rstrip("/")
    if not endpoint.startswith(("http://", "https://")):
        raise CliError("--endpoint must be an http(s) URL")
    unknown = [s for s in args.scopes or [] if s not in SCOPES]
    if unknown:
        raise CliError(f"unknown scope {unknown[0]!r}; the scopes are: {', '.join(SCOPES)}")
    if args.package and not is_package_id(args.package):
        raise CliError(f"package id {args.package!r} is not valid: 1-64 characters of [a-z0-9-]")
    scopes: list[str] | None = None
    if args.local:
        if not args.tenant:
            raise CliError("--local needs --tenant NAME")
        scopes = args.scopes or list(ALL_SCOPES)
        body: dict[str, Any] = {"tenant": args.tenant, "scopes": scopes}
        if args.ttl:
            body["ttl"] = args.ttl
        _, out = Api(endpoint, None).call("POST", "/local/token", json_body=body, auth=False)
        token, expires = out["token"], out.get("expiresAt")
    else:
        if not args.token:
            raise CliError("give --token TOKEN (or --local for the local stack)")
        token, expires = args.token, _jwt_expiry(args.token)
        scopes = _jwt_scopes(args.token)
    cfg = load_config()
    cfg.update(
        {"endpoint": endpoint, "token": token, "tenant": args.tenant, "expiresAt": expires, "scopes": scopes}
    )
    if args.package:
        cfg["package"] = args.package
    path = save_config(cfg)
    if args.json:
        emit_json(
            {
                "endpoint": endpoint,
                "tenant": args.tenant,
                "scopes": scopes,
                "package": cfg.get("package"),
                "expiresAt": expires,
                "config": str(path),
                **({"token": token} if args.print_token else {}),
            }
        )
    else:
        who = f" as tenant {args.tenant}" if args.tenant else ""
        say(f"logged in to {endpoint}{who}; token stored in {path}")
        if scopes is not None:
            say(f"  scopes: {' '.join(scopes)}")
        if expires:
            say(f"  expires: {expires}")
        if cfg.get("package"):
            say(f"  default package: {cfg['package']}")
        if args.print_token:
            say(token)
    return EXIT_OK


def _jwt_claims(token: str) -> dict[str, Any]:
    """A JWT's claims, NOT verified (the server verifies): only to show and to warn of expiry."""
    import base64

    try:
        part = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def _jwt_expiry(token: str) -> str | None:
    import datetime as dt

    exp = _jwt_claims(token).get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        return None
    return dt.datetime.fromtimestamp(exp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _jwt_scopes(token: str) -> list[str] | None:
    raw = _jwt_claims(token).get("scope", _jwt_claims(token).get("scp"))
    if isinstance(raw, str):
        return raw.split()
    if isinstance(raw, list):
        return [str(x) for x in raw]
    return None


def cmd_whoami(args: argparse.Namespace) -> int:
    """Who the stored (or $ACX_TOKEN) token says you are; never prints the token."""
    cfg = load_config()
    token = os.environ.get("ACX_TOKEN") or cfg.get("token")
    endpoint = os.environ.get("ACX_ENDPOINT") or cfg.get("endpoint")
    if not token or not endpoint:
        raise CliError("not logged in: run `acx login --endpoint URL --token TOKEN` (or --local)")
    claims = _jwt_claims(str(token))
    expires = _jwt_expiry(str(token)) or cfg.get("expiresAt")
    out = {
        "endpoint": endpoint,
        "tenant": claims.get("tenant", cfg.get("tenant")),
        "subject": claims.get("sub"),
        "scopes": _jwt_scopes(str(token)) or cfg.get("scopes"),
        "expiresAt": expires,
        "expired": _expired(expires),
        "package": os.environ.get("ACX_PACKAGE") or cfg.get("package"),
        "config": str(config_path()),
        "tokenFrom": "ACX_TOKEN" if os.environ.get("ACX_TOKEN") else "config",
    }
    if args.json:
        emit_json(out)
    else:
        for key, value in out.items():
            shown = " ".join(value) if isinstance(value, list) else value
            shown = ("yes" if value else "no") if isinstance(value, bool) else shown
            say(f"{key:>10}  {shown if shown is not None else '-'}")
        if out["expired"]:
            print("error: the token has expired: run `acx login` again", file=sys.stderr)
            return EXIT_INVALID
    return EXIT_OK


def cmd_logout(args: argparse.Namespace) -> int:
    """Forget the stored token (the endpoint, default package and witness state stay)."""
    cfg = load_config()
    had = bool(cfg.pop("token", None))
    for key in ("expiresAt", "scopes"):
        cfg.pop(key, None)
    path = save_config(cfg)
    if args.json:
        emit_json({"loggedOut": had, "config": str(path)})
    else:
        say(f"logged out; token removed from {path}" if had else f"no token was stored in {path}")
    return EXIT_OK


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


def _poll(api: Api, path: str, done: Any, timeout: float, what: str, show: bool = False) -> Any:
    """GET ``path`` until ``done(body)``; backs off to 5 s; CliError(exit 5) on timeout. ``show``: a
    spinner with the elapsed time and the job's status on stderr."""
    from acx.cli.progress import bar

    deadline = time.monotonic() + timeout
    delay = 0.25
    with bar(f"waiting for {what}", None, show) as spinner:
        while True:
            _, body = api.call("GET", path)
            if done(body):
                return body
            if isinstance(body, dict) and body.get("status"):
                spinner.update(description=f"waiting for {what}: {body['status']}")
            if time.monotonic() + delay > deadline:
                raise CliError(f"timed out after {timeout:.0f}s waiting for {what}", EXIT_SERVER)
            time.sleep(delay)
            delay = min(delay * 1.6, 5.0)


def bundle_input(source: Path) -> tuple[Path, int, str, list[Any] | None]:
    """(bundle file, size, what was done, records) for a package directory, a bundle or a records
    array: the one place the CLI turns what a user has into the upload format (docs/FORMATS.md)."""
    import tempfile

    from acx.core.bundle import SCHEMA_VERSION, BundleError, pack_directory, parse_bundle
    from acx.core.canonical import CanonicalError, dumps, loads

    if source.is_dir():
        from acx.cli.offline_core import default_salt_path, read_salt

        salt_path = default_salt_path()
        try:
            salt = read_salt(salt_path) if salt_path.is_file() else None
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
    path, size, what, records = bundle_input(Path(args.bundle))
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


def cmd_recall(args: argparse.Namespace) -> int:
    """Print memories under the advisory banner (memory informs, it never authorizes).

    ``--all`` follows ``nextCursor`` to the end with the largest pages the API serves; with
    ``-o FILE`` the records are streamed to FILE as a JSON array (a records array every command
    takes) page by page, never all held in memory."""
    from acx.cli.progress import bar, wanted

    api = api_from(args)
    limit = args.limit or (RECALL_MAX_LIMIT if args.all or args.output else None)
    query: dict[str, Any] = {"tier": args.tier, "tag": args.tag, "limit": limit}
    records: list[Any] = []
    first: dict[str, Any] | None = None
    cursor = args.cursor
    count = 0
    corrupt = False
    sink: IO[str] | None = None
    tmp: Path | None = None
    if args.output:
        out_path = Path(args.output)
        tmp = out_path.with_name(out_path.name + ".part")
        sink = tmp.open("w", encoding="utf-8")
        sink.write("[")
    try:
        with bar("listing memories", None, wanted(args) and bool(args.all)) as progress:
            while True:
                path = pkg_path(args.package, "memories")
                _, page = api.call("GET", path, query={**query, "cursor": cursor})
                first = first or page
                corrupt = corrupt or bool(page.get("corrupt"))
                batch = page.get("records") or []
                if sink is not None:
                    for record in batch:
                        sink.write(("," if count else "") + "\n" + json.dumps(record, ensure_ascii=False))
                        count += 1
                else:
                    records.extend(batch)
                    count += len(batch)
                progress.update(description=f"listing memories: {count}")
                cursor = page.get("nextCursor")
                if not args.all or not cursor:
                    break
        if sink is not None:
            sink.write("\n]\n")
            sink.close()
            sink = None
            assert tmp is not None
            os.replace(tmp, args.output)
    finally:
        if sink is not None:
            sink.close()
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    assert first is not None
    out = {**first, "records": records, "nextCursor": cursor, "corrupt": corrupt}
    if args.output:
        summary = {
            "advisory": first.get("advisory"),
            "records": count,
            "file": args.output,
            "corrupt": corrupt,
        }
        if args.json:
            emit_json({**summary, "nextCursor": cursor})
        else:
            say(f"[advisory] {first.get('advisory')}")
            say(f"wrote {count} records to {args.output} (a records array)")
    elif args.json:
        emit_json(out)
    else:
        banner = first.get("advisory")
        say(f"[advisory] {banner}" if banner else "[advisory] memory informs, it never authorizes")
        _records_table(records)
        more = f"; more with --cursor {cursor} or --all" if cursor else ""
        say(f"({len(records)} records{more})")
    if corrupt:
        print("error: the store reported corruption; results may be incomplete", file=sys.stderr)
        return EXIT_TAMPERED
    return EXIT_OK


def _records_table(records: list[Any]) -> None:
    from acx.cli.tables import table

    rows = []
    for r in records:
        if not isinstance(r, dict):
            continue
        zone = r.get("zone") or ("rom" if r.get("portable") is True else "save")
        summary = str(r.get("summary") or "")
        rows.append(
            [
                str(r.get("id")),
                zone,
                str(r.get("title", "")),
                ",".join(map(str, r.get("tags") or [])),
                summary if len(summary) <= 80 else summary[:77] + "...",
            ]
        )
    table(["id", "zone", "title", "tags", "summary"], rows)


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget one memory by id or by content hash, or a knowledge/skill file by its package path:
    erased, tombstoned, never written again."""
    if sum(map(bool, (args.id, args.content_hash, args.file))) != 1:
        raise CliError("give exactly one of ID, --content-hash H or --file PATH")
    api = api_from(args)
    if args.file:
        _, out = api.call("DELETE", pkg_path(args.package, "files", args.file))
    elif args.id:
        _, out = api.call("DELETE", pkg_path(args.package, "memories", args.id))
    else:
        _, out = api.call(
            "DELETE", pkg_path(args.package, "memories"), query={"contentHash": args.content_hash}
        )
    if args.json:
        emit_json(out)
    else:
        log = out.get("log") or {}
        revoked = out.get("revokedCartridges") or []
        say(
            f"forgotten {json.dumps(out.get('forgotten', out.get('forgottenFile')))}; "
            f"log seq {log.get('fromSeq')}..{log.get('toSeq')}"
            + (f"; revoked cartridges: {', '.join(map(str, revoked))}" if revoked else "")
        )
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """Ask for a signed cartridge; with --wait, poll until it is ready."""
    api = api_from(args)
    _, out = api.call(
        "POST",
        pkg_path(args.package, "cartridges"),
        json_body={"includeFieldLearned": bool(args.include_field_learned)},
    )
    if args.wait and out.get("status") != "ready":
        from acx.cli.progress import wanted

        cid = out["cartridgeId"]
        out = _poll(
            api,
            pkg_path(args.package, "cartridges", cid),
            lambda b: isinstance(b, dict) and b.get("status") in ("ready", "failed", "rejected"),
            args.timeout,
            f"export of cartridge {cid}",
            wanted(args),
        )
        if out.get("status") == "failed":
            raise CliError(f"export {cid} failed", EXIT_SERVER, status=500, code="export_failed", body=out)
    if args.json:
        emit_json(out)
    else:
        say(
            f"cartridge {out.get('cartridgeId')} {out.get('status')}"
            + (f"  manifest {out['manifestHash']}" if out.get("manifestHash") else "")
            + (f"  key {out['keyid']}" if out.get("keyid") else "")
        )
        if out.get("fieldLearned"):
            say(f"  field-learned records: {out['fieldLearned']}")
            if str(out["fieldLearned"]).startswith("quarantined"):
                say("  (they stay in the service; --include-field-learned exports them too)")
        if out.get("status") != "ready":
            say("  (not ready yet: run `acx export --wait` or `acx download` later)")
    return EXIT_OK


def cmd_download(args: argparse.Namespace) -> int:
    """Fetch a cartridge through its short-lived presigned URL into -o FILE (atomically)."""
    api = api_from(args)
    path = pkg_path(args.package, "cartridges", args.cartridge_id)
    meta = _poll(
        api,
        path,
        lambda b: isinstance(b, dict) and b.get("status") != "pending",
        args.timeout,
        f"cartridge {args.cartridge_id}",
    )
    if not meta.get("url"):
        raise CliError(f"cartridge {args.cartridge_id} is {meta.get('status')}, nothing to download")
    out = Path(args.output)
    tmp = out.with_name(out.name + ".part")
    req = urllib.request.Request(meta["url"], headers={"User-Agent": USER_AGENT})  # noqa: S310 - presigned
    size = 0
    from acx.cli.progress import bar, wanted

    try:
        with (
            urllib.request.urlopen(req, timeout=api.timeout) as resp,  # noqa: S310
            tmp.open("wb") as fh,
            bar("downloading", meta.get("bytes"), wanted(args), unit="bytes") as progress,
        ):
            while chunk := resp.read(1 << 16):
                fh.write(chunk)
                size += len(chunk)
                progress.advance(len(chunk))
    except urllib.error.HTTPError as err:
        tmp.unlink(missing_ok=True)
        raise CliError(
            "presigned download refused (expired?)",
            exit_code_for(err.code, None),
            status=err.code,
            code="s3_error",
            path="GET download url",
        ) from None
    except (urllib.error.URLError, OSError) as err:
        tmp.unlink(missing_ok=True)
        raise CliError(f"download failed: {err}", EXIT_SERVER) from None
    os.replace(tmp, out)
    result = {
        "cartridgeId": args.cartridge_id,
        "path": str(out),
        "bytes": size,
        "manifestHash": meta.get("manifestHash"),
    }
    if args.json:
        emit_json(result)
    else:
        say(f"downloaded cartridge {args.cartridge_id} to {out} ({size} bytes)")
    return EXIT_OK


def cmd_log_show(args: argparse.Namespace) -> int:
    """Show the log head and signed checkpoint; optionally save the checkpoint and verifier key."""
    api = api_from(args)
    _, out = api.call("GET", pkg_path(args.package, "log"))
    if args.out_checkpoint:
        Path(args.out_checkpoint).write_text(str(out.get("checkpoint") or ""), encoding="utf-8")
    if args.out_vkey:
        Path(args.out_vkey).write_text(str(out.get("verifierKey") or "") + "\n", encoding="utf-8")
    if args.json:
        emit_json(out)
    else:
        say(f"log size {out.get('size')}")
        say(f"verifier key {out.get('verifierKey')}")
        say(str(out.get("checkpoint") or "(no checkpoint)").rstrip("\n"))
    return EXIT_OK


def _b(value: Any) -> bytes:
    """Decode a hash sent as hex or standard base64."""
    import base64
    import binascii

    s = str(value)
    if len(s) == 64:
        try:
            return bytes.fromhex(s)
        except ValueError:
            pass
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise CliError(f"cannot decode hash {s[:16]}...", EXIT_SERVER) from None


def parse_checkpoint_body(text: str) -> tuple[str, int, bytes]:
    """(origin, size, root hash) from a C2SP checkpoint's note body."""
    import base64

    lines = text.split("\n")
    if len(lines) < 3:
        raise ValueError("checkpoint too short")
    return lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True)


def local_checks(api: Api, package: str, state_key: str) -> dict[str, Any]:
    """Client-side checks: checkpoint signature, inclusion of the last entry, consistency since last time."""
    checks: dict[str, Any] = {}
    _, head = api.call("GET", pkg_path(package, "log"))
    checkpoint, vkey = head.get("checkpoint"), head.get("verifierKey")
    if not checkpoint or not vkey:
        return {"checkpoint": "missing"}
    from acx.core.checkpoint import verify_checkpoint

    try:
        verify_checkpoint(checkpoint, vkey)
        checks["checkpointSignature"] = "ok"
    except Exception as exc:  # malformed checkpoint or key, bad signature: a failed check, not a crash
        checks["checkpointSignature"] = "failed"
        checks["checkpointError"] = f"{type(exc).__name__}: {exc}"[:200]
    try:
        _, size, root = parse_checkpoint_body(checkpoint)
    except (ValueError, IndexError):
        checks["checkpointFormat"] = "failed"
        return checks
    from acx.core.merkle import verify_consistency, verify_inclusion

    if size > 0:
        _, inc = api.call(
            "GET", pkg_path(package, "log", "proof", "inclusion"), query={"index": size - 1, "size": size}
        )
        ok = verify_inclusion(_b(inc["leafHash"]), size - 1, size, [_b(p) for p in inc["proof"]], root)
        checks["inclusion"] = "ok" if ok else "failed"
    cfg = load_config()
    seen = (cfg.get("witness") or {}).get(state_key)
    if seen and 0 < int(seen["size"]) <= size:
        old_size, old_root = int(seen["size"]), _b(seen["root"])
        if old_size == size:
            ok = old_root == root
        else:
            _, cons = api.call(
                "GET", pkg_path(package, "log", "proof", "consistency"), query={"from": old_size, "to": size}
            )
            ok = verify_consistency(old_size, size, old_root, root, [_b(p) for p in cons["proof"]])
        checks["consistency"] = f"{'ok' if ok else 'failed'} (from size {old_size})"
    elif seen:
        checks["consistency"] = f"failed (log shrank from {seen['size']} to {size})"
    failed = any(str(v).startswith("failed") for v in checks.values())
    if not failed:
        import base64

        cfg.setdefault("witness", {})[state_key] = {"size": size, "root": base64.b64encode(root).decode()}
        save_config(cfg)
    return checks


#: The verification result keys printed in text mode: every one is a field of the server's response
#: model ``acx.contract.models.LogVerifyResult`` (tests/unit/test_cli_contract.py holds them to it).
VERIFY_DETAIL_KEYS = (
    "size",
    "checked",
    "rows",
    "firstBadSeq",
    "reason",
    "detail",
    "orphanCount",
    "orphans",
    "checkpointSize",
    "witnessSize",
)


def cmd_log_verify(args: argparse.Namespace) -> int:
    """Server-side verification plus local checkpoint, inclusion and consistency checks."""
    api = api_from(args)
    _, result = api.call("GET", pkg_path(args.package, "log", "verify"))
    server_ok = isinstance(result, dict) and result.get("status") == "ok"
    checks: dict[str, Any] = {}
    if not args.no_local:
        checks = local_checks(api, args.package, f"{api.endpoint} {args.package}")
    local_ok = not any(str(v).startswith("failed") for v in checks.values())
    if args.json:
        emit_json({**result, "client": checks} if checks else result)
    else:
        say(f"server verification: {result.get('status')}")
        for key in VERIFY_DETAIL_KEYS:
            if key in result and result[key] not in (None, [], {}):
                say(f"  {key}: {json.dumps(result[key])[:500]}")
        for key, value in checks.items():
            say(f"local {key}: {value}")
        verdict = "ok" if server_ok and local_ok else "FAILED"
        local = "ok" if local_ok else "failed"
        say(f"verdict: {verdict} (server {result.get('status')}, local checks {local})")
    if not server_ok or not local_ok:
        print("error: log verification failed", file=sys.stderr)
        return EXIT_TAMPERED
    return EXIT_OK


# -- registration ------------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser, package: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="raw JSON on stdout (for scripts)")
    p.add_argument("--http-timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    if package:
        p.add_argument(
            "--package",
            "-p",
            help="package id (1-64 chars of [a-z0-9-]); default $ACX_PACKAGE or `acx login --package`",
        )
        p.set_defaults(needs_package=True)


def register(subparsers: Any) -> None:
    """Add the API client commands to the ``acx`` parser."""
    p = subparsers.add_parser(
        "login", help="store an endpoint and token (--local: dev token from the local stack)"
    )
    p.add_argument("--endpoint", required=True, help="API base URL")
    p.add_argument("--local", action="store_true", help="get a dev token from the local gateway")
    p.add_argument("--tenant", help="tenant (with --local)")
    p.add_argument("--scopes", nargs="+", help=f"scopes (with --local; default all: {' '.join(SCOPES)})")
    p.add_argument("--ttl", type=int, help="token lifetime in seconds (with --local)")
    p.add_argument("--token", help="bearer token of a real deployment")
    p.add_argument("--package", "-p", help="default package for every command")
    p.add_argument("--print-token", action="store_true", help="print the token as the last line")
    _common(p, package=False)
    p.set_defaults(func=_run(cmd_login))

    p = subparsers.add_parser("whoami", help="endpoint, tenant, scopes, expiry and default package")
    _common(p, package=False)
    p.set_defaults(func=_run(cmd_whoami))

    p = subparsers.add_parser("logout", help="forget the stored token")
    _common(p, package=False)
    p.set_defaults(func=_run(cmd_logout))

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
    p.add_argument("--presigned", action="store_true", help="use the presigned path even when small")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for ingest")
    _common(p)
    p.set_defaults(func=_run(cmd_upload))

    p = subparsers.add_parser("recall", help="list memories (under the advisory banner)")
    p.add_argument("--tier", choices=("rom", "save"))
    p.add_argument("--tag")
    p.add_argument("--limit", type=int, help=f"records per page (1-{RECALL_MAX_LIMIT})")
    p.add_argument("--cursor", help="continue from a nextCursor")
    p.add_argument("--all", action="store_true", help="follow nextCursor to the end")
    p.add_argument("-o", "--output", help="stream the records to FILE as a JSON records array")
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    _common(p)
    p.set_defaults(func=_run(cmd_recall))

    p = subparsers.add_parser("forget", help="forget a memory by id or content hash, or a file by path")
    p.add_argument("id", nargs="?")
    p.add_argument("--content-hash")
    p.add_argument("--file", help="package path of a knowledge or skill file (knowledge/a.md)")
    _common(p)
    p.set_defaults(func=_run(cmd_forget))

    p = subparsers.add_parser("export", help="export a signed cartridge")
    p.add_argument("--include-field-learned", action="store_true")
    p.add_argument("--wait", action="store_true", help="poll until ready")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    _common(p)
    p.set_defaults(func=_run(cmd_export))

    p = subparsers.add_parser("download", help="download a cartridge via its presigned URL")
    p.add_argument("cartridge_id")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    _common(p)
    p.set_defaults(func=_run(cmd_download))

    log = subparsers.add_parser("log", help="the package's receipted log")
    log_sub = log.add_subparsers(dest="log_command", metavar="SUBCOMMAND")
    p = log_sub.add_parser("show", help="log size, signed checkpoint and verifier key")
    p.add_argument("--out-checkpoint")
    p.add_argument("--out-vkey")
    _common(p)
    p.set_defaults(func=_run(cmd_log_show))
    p = log_sub.add_parser("verify", help="verify the log (server) and its checkpoint and proofs (locally)")
    p.add_argument("--no-local", action="store_true", help="server-side verification only")
    _common(p)
    p.set_defaults(func=_run(cmd_log_verify))
