"""`acx` console script: dispatches to the command modules listed in COMMAND_MODULES.

Each module exposes ``register(subparsers)``; module-level imports stay light because the CLI's
whole-process time (start-up included) is measured.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Imports inside functions are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

COMMAND_MODULES = (
    "acx.cli.offline_core",
    "acx.cli.offline_merge",
    "acx.cli.offline_scrub",
    "acx.cli.offline_cartridge",
    "acx.cli.client_session",
    "acx.cli.client_upload",
    "acx.cli.client_memories",
    "acx.cli.client_review",
    "acx.cli.client_cartridges",
    "acx.cli.client_log",
    "acx.cli.client_lists",
    "acx.cli.search",
    "acx.cli.mcp_server",
)

# Commands that need only their own module: ``acx merge ...`` then skips importing (and, when no
# bytecode is cached, compiling) every other command family, the HTTP client's urllib/ssl/email stack
# included: ~0.1 s of the whole-process time those two commands are measured by.
DIRECT_COMMANDS = {"merge": "acx.cli.offline_merge", "scrub": "acx.cli.offline_scrub"}

# glibc's malloc can put its heap on transparent huge pages (glibc >= 2.35, only at start-up, set
# through the environment). Merge and scrub build a heap of ~300 MB in a second; on the VMs they are
# measured on, page faults are a third of that second, and a 2 MiB page faults once where 4 KiB pages
# fault 512 times.
_HUGE_PAGES = "glibc.malloc.hugetlb=1"
_THP_MODE = "/sys/kernel/mm/transparent_hugepage/enabled"

from acx.contract import (  # noqa: E402 - constants only, no pydantic (start-up time)
    EXIT_BLOCKED,
    EXIT_CODES_TEXT,
    EXIT_INVALID,
    EXIT_NOT_TRUSTED,
    EXIT_OK,
    EXIT_TAMPERED,
)

__all__ = ["EXIT_BLOCKED", "EXIT_INVALID", "EXIT_NOT_TRUSTED", "EXIT_OK", "EXIT_TAMPERED", "main"]


def build_parser(modules: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The ``acx`` parser with the commands of ``modules`` (default: every command family)."""
    parser = argparse.ArgumentParser(
        prog="acx",
        description="Memory cartridges: offline tools (canon, merge, scrub, verify...) and the API client.",
        epilog=EXIT_CODES_TEXT,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # command family not built yet
            raise
        module.register(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("acx-memory")
    except PackageNotFoundError:
        return "unknown"


class _Version(argparse.Action):
    """``--version``, looked up only when asked (importlib.metadata costs start-up time)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(f"acx {_version()}\n")
        parser.exit(0)


def restart_on_huge_pages() -> None:
    """Start this process again, once, with glibc's heap on transparent huge pages, when the kernel
    gives them only on request (THP mode "madvise") and glibc can ask (2.35 and newer). Costs one
    interpreter start (~20 ms); saves ~0.1-0.3 s on 50k records (README benchmarks). Anything
    missing or failing: carry on as is."""
    import os

    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if sys.platform != "linux" or "glibc.malloc.hugetlb" in tunables or not sys.orig_argv:
        return
    try:
        with open(_THP_MODE, encoding="ascii") as handle:
            if "[madvise]" not in handle.read():
                return  # "always": huge pages already; "never": none to have
        name, _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
        if name != "glibc" or tuple(int(part) for part in version.split(".")[:2]) < (2, 35):
            return
        env = {**os.environ, "GLIBC_TUNABLES": f"{tunables}:{_HUGE_PAGES}" if tunables else _HUGE_PAGES}
        os.execve(sys.executable, sys.orig_argv, env)  # noqa: S606 - this same command, again
    except (OSError, ValueError):
        return


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    direct = DIRECT_COMMANDS.get(words[0]) if words else None
    if direct and argv is None:
        restart_on_huge_pages()
    parser = build_parser((direct,) if direct else COMMAND_MODULES)
    args = parser.parse_args(words)
    args.process_exit = argv is None  # the process is this command: it may end with os._exit
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_INVALID
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
