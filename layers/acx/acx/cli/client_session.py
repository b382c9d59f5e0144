"""`acx login`, `acx whoami`, `acx logout`: the stored endpoint and token (config and HTTP are
:mod:`acx.cli.client`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from acx.cli.client import (
    EXIT_INVALID,
    EXIT_OK,
    Api,
    CliError,
    _common,
    _expired,
    _run,
    config_path,
    emit_json,
    load_config,
    save_config,
    say,
)
from acx.contract import SCOPES, is_package_id

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

ALL_SCOPES = SCOPES


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
        if args.sub:
            body["sub"] = args.sub  # a reviewer logs in as another subject than the agents it reviews
        if args.agent:
            body["agent"] = args.agent
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


def register(subparsers: Any) -> None:
    """Add the session commands to the ``acx`` parser."""
    p = subparsers.add_parser(
        "login", help="store an endpoint and token (--local: dev token from the local stack)"
    )
    p.add_argument("--endpoint", required=True, help="API base URL")
    p.add_argument("--local", action="store_true", help="get a dev token from the local gateway")
    p.add_argument("--tenant", help="tenant (with --local)")
    p.add_argument("--scopes", nargs="+", help=f"scopes (with --local; default all: {' '.join(SCOPES)})")
    p.add_argument("--ttl", type=int, help="token lifetime in seconds (with --local)")
    p.add_argument("--sub", help="token subject (with --local; default dev): who the log names as actor")
    p.add_argument("--agent", help="agent id claim (with --local): which agent writes, for attribution")
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
