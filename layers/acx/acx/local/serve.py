"""`python -m acx.local.serve --port 8787`: run the local stack until Ctrl-C (what `make serve` does).

Prints what a developer needs to start poking at it: the API endpoint, a dev token for tenant
``demo`` and ready-to-paste commands. State (packages, logs, objects, queues, keys, the dev issuer's
key) lives in the data directory, ``--data DIR`` / ``$ACX_LOCAL_DATA`` / ``.acx-local/`` in the
repository, and survives a stop or a crash; ``--reset`` empties it (``make reset-local``),
``--ephemeral`` uses a temporary directory removed at stop. See docs/LOCAL.md.

Everything listens on 127.0.0.1 only. ``POST /local/token`` mints a token with any scope for any
tenant: it is a development issuer, never expose the stack beyond this host.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def banner(stack: Any, tenant: str) -> str:
    """The text printed once the stack is up."""
    token = stack.token(tenant)
    ep = stack.endpoint
    return "\n".join(
        [
            "acx local stack is running (embedded backend, no AWS account needed). Ctrl-C stops it.",
            f"  data           {stack.data_dir}"
            + ("   (--ephemeral: removed at stop)" if stack.ephemeral else "")
            + ("   (restarted: state restored)" if stack.restarted else ""),
            f"  API endpoint   {ep}",
            "",
            f"Dev token for tenant {tenant!r}, all scopes, valid 1 hour:",
            f"  {token}",
            "",
            "Try:",
            f"  acx login --local --endpoint {ep} --tenant {tenant}",
            "  acx recall --package my-package",
            f"  curl -s {ep}/v1/health",
            f"  curl -s -H 'Authorization: Bearer {token}' {ep}/v1/packages/my-package/log",
            f'  curl -s -X POST {ep}/local/token -d \'{{"tenant": "{tenant}"}}\'',
            "",
            "The local token issuer is for development only: it signs any tenant and scope for anyone",
            "who can reach 127.0.0.1. Never expose this stack beyond this host.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acx.local.serve", description=__doc__)
    parser.add_argument("--port", type=int, default=8787, help="gateway port (0 = any free port)")
    parser.add_argument("--tenant", default="demo", help="tenant of the printed dev token")
    parser.add_argument(
        "--verify-interval",
        type=float,
        default=300.0,
        help="seconds between scheduled verifications (0 = off)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="data directory (default: $ACX_LOCAL_DATA, else .acx-local/ in the repository)",
    )
    parser.add_argument(
        "--ephemeral", action="store_true", help="use a temporary data directory, removed at stop"
    )
    parser.add_argument("--reset", action="store_true", help="empty the data directory and exit")
    parser.add_argument(
        "--no-fsync",
        action="store_true",
        help="write without fsync: survives kill -9, not a power cut (faster on slow disks)",
    )
    args = parser.parse_args(argv)

    from acx.local.stack import DataDirBusy, DataDirDamaged, LocalStack, default_data_dir, reset_data_dir

    data = None if args.ephemeral else (args.data or default_data_dir())
    if args.reset:
        if data is None:
            parser.error("--reset needs a data directory, not --ephemeral")
        try:
            removed = reset_data_dir(data)
        except DataDirBusy as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 5
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"error: cannot empty {data}: {exc}", file=sys.stderr)
            return 5
        print(f"emptied {data} ({len(removed)} files)" if removed else f"{data} holds no local state")
        return 0

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with LocalStack(
            port=args.port,
            verify_interval=args.verify_interval or None,
            data_dir=data,
            fsync=not args.no_fsync,
        ) as stack:
            print(banner(stack, args.tenant), flush=True)
            try:
                while not stop.wait(1.0):
                    pass
            except KeyboardInterrupt:
                pass
            print("\nstopping...", file=sys.stderr, flush=True)
    except DataDirBusy as exc:
        print(f"error: {exc} (or pass --data DIR)", file=sys.stderr)
        return 5
    except DataDirDamaged as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 5
    except OSError as exc:
        print(f"error: cannot start the local stack: {exc}", file=sys.stderr)
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())
