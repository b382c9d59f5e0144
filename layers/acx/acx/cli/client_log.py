"""`acx log show` and `acx log verify`: the receipted log, its signed checkpoint, and the client's
own checks of the checkpoint signature, inclusion and consistency (witness state in the config).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from acx.cli.client import (
    EXIT_OK,
    EXIT_SERVER,
    EXIT_TAMPERED,
    Api,
    CliError,
    _common,
    _run,
    api_from,
    emit_json,
    load_config,
    pkg_path,
    save_config,
    say,
)

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).


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


def local_checks(api: Api, package: str, state_key: str) -> dict[str, Any]:
    """Client-side checks: checkpoint signature, inclusion of the last entry, consistency since last time."""
    checks: dict[str, Any] = {}
    _, head = api.call("GET", pkg_path(package, "log"))
    checkpoint, vkey = head.get("checkpoint"), head.get("verifierKey")
    if not checkpoint or not vkey:
        return {"checkpoint": "missing"}
    from acx.core.checkpoint import parse_checkpoint, verify_checkpoint

    try:
        verify_checkpoint(checkpoint, vkey)
        checks["checkpointSignature"] = "ok"
    except Exception as exc:  # malformed checkpoint or key, bad signature: a failed check, not a crash
        checks["checkpointSignature"] = "failed"
        checks["checkpointError"] = f"{type(exc).__name__}: {exc}"[:200]
    try:
        parsed = parse_checkpoint(checkpoint)  # the body only: a bad signature still gets its proofs checked
        size, root = parsed.size, parsed.root
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
#: model ``acx.contract.models.LogVerifyResult`` (tests/unit/contract/test_cli_contract.py holds them to it).
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


def register(subparsers: Any) -> None:
    """Add the log commands to the ``acx`` parser."""
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
