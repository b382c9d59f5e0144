"""The `acx` dispatcher: a direct command (merge, scrub) parses exactly as with every family loaded."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from acx.cli.main import COMMAND_MODULES, DIRECT_COMMANDS, build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subs[0].choices)


def test_direct_commands_are_registered_by_their_module_only() -> None:
    everything = _commands(build_parser())
    for command, module in DIRECT_COMMANDS.items():
        assert module in COMMAND_MODULES
        assert set(_commands(build_parser((module,)))) == {command}
        assert command in everything


@pytest.mark.parametrize("command", sorted(DIRECT_COMMANDS))
def test_direct_parser_gives_the_same_help_and_namespace(command: str) -> None:
    full = _commands(build_parser())[command]
    alone = _commands(build_parser((DIRECT_COMMANDS[command],)))[command]
    assert alone.format_help() == full.format_help()
    argv = [command, "some-file"]
    assert build_parser((DIRECT_COMMANDS[command],)).parse_args(argv) == build_parser().parse_args(argv)


def test_merge_and_scrub_do_not_import_the_http_client(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    code = (
        "import sys; from acx.cli.main import main; "
        f"codes = [main(['merge', {missing!r}]), main(['scrub', {missing!r}])]; "
        "print(codes, 'acx.cli.client' in sys.modules, 'acx.cli.offline_core' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[2, 2] False False"
