"""The `acx` API client's shared plumbing: configuration, HTTP, errors and exit codes, output, the
``_run`` wrapper every command goes through, and polling. The commands are in modules by group:
:mod:`acx.cli.client_session` (login, whoami, logout), :mod:`acx.cli.client_upload`,
:mod:`acx.cli.client_memories` (recall, forget), :mod:`acx.cli.client_cartridges` (export, download),
:mod:`acx.cli.client_log` (log show, log verify) and :mod:`acx.cli.client_lists` (lists and gets).

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
from typing import Any

from acx.contract import (
    ERR_BLOCKED,
    ERR_TOKEN_EXPIRED,
    EXIT_BLOCKED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_TAMPERED,
    HINTS,
    is_package_id,
)

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

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
