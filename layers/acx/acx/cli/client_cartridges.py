"""`acx export` and `acx download`: signed cartridges, asked for and fetched."""

from __future__ import annotations

import argparse
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from acx.cli.client import (
    EXIT_OK,
    EXIT_SERVER,
    USER_AGENT,
    CliError,
    _common,
    _poll,
    _run,
    api_from,
    emit_json,
    exit_code_for,
    pkg_path,
    say,
)

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).


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


def register(subparsers: Any) -> None:
    """Add the cartridge commands to the ``acx`` parser."""
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
