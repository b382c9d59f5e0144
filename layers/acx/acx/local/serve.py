"""`python -m acx.local.serve --port 8787`: run the local stack until Ctrl-C (what `make serve` does).

Prints what a developer needs to start poking at it: the API endpoint, the moto endpoint (for the
AWS CLI or boto3), a dev token for tenant ``demo`` and ready-to-paste commands.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any


def banner(stack: Any, tenant: str) -> str:
    """The text printed once the stack is up."""
    token = stack.token(tenant)
    ep = stack.endpoint
    return "\n".join(
        [
            "acx local stack is running (moto, no AWS account needed). Ctrl-C stops it.",
            f"  API endpoint   {ep}",
            f"  moto endpoint  {stack.moto_endpoint}   (AWS_ENDPOINT_URL for the aws CLI / boto3)",
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
    args = parser.parse_args(argv)

    from acx.local.stack import LocalStack

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with LocalStack(port=args.port, verify_interval=args.verify_interval or None) as stack:
            print(banner(stack, args.tenant), flush=True)
            try:
                while not stop.wait(1.0):
                    pass
            except KeyboardInterrupt:
                pass
            print("\nstopping...", file=sys.stderr, flush=True)
    except OSError as exc:
        print(f"error: cannot start the local stack: {exc}", file=sys.stderr)
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())
