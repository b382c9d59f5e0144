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


# --- the one restart on huge pages (merge and scrub)


class Restarted(Exception):
    pass


@pytest.fixture
def restarts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str], dict[str, str]]]:
    """Calls to os.execve (raised as Restarted, as an exec never returns), with THP in madvise mode
    and glibc 2.36 unless a test says otherwise."""
    import os

    from acx.cli import main as cli_main

    mode = tmp_path / "enabled"
    mode.write_text("always [madvise] never\n")
    monkeypatch.setattr(cli_main, "_THP_MODE", str(mode))
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))
        raise Restarted

    monkeypatch.setattr(os, "execve", execve)
    return calls


def test_the_command_restarts_itself_once_with_the_heap_on_huge_pages(
    restarts: list[tuple[str, list[str], dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from acx.cli import main as cli_main

    monkeypatch.setattr(sys, "argv", ["acx", "merge", "x.json"])
    with pytest.raises(Restarted):
        cli_main.main()
    path, argv, env = restarts[0]
    assert (path, argv) == (sys.executable, sys.orig_argv)  # the same command, as it was started
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")  # the user's tunables are kept
    with pytest.raises(Restarted):
        cli_main.restart_on_huge_pages()
    assert restarts[1][2]["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"


@pytest.mark.parametrize(
    "setting",
    [
        "restarted already",  # the restarted process: no loop
        "user says hugetlb=0",
        "THP always",
        "THP never",
        "no THP file",
        "glibc 2.34",
        "musl",
        "called in-process",
        "another command",
    ],
)
def test_no_restart_when_it_cannot_help_or_was_done(
    setting: str,
    restarts: list[tuple[str, list[str], dict[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os

    from acx.cli import main as cli_main

    argv = ["acx", "scrub", str(tmp_path / "missing.json")]
    if setting == "restarted already":
        monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    elif setting == "user says hugetlb=0":
        monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")
    elif setting.startswith("THP "):
        Path(cli_main._THP_MODE).write_text(
            "[always] madvise never\n" if setting == "THP always" else "always madvise [never]\n"
        )
    elif setting == "no THP file":
        monkeypatch.setattr(cli_main, "_THP_MODE", str(tmp_path / "nothing"))
    elif setting == "glibc 2.34":
        monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.34")
    elif setting == "musl":
        monkeypatch.setattr(os, "confstr", lambda name: None)
    elif setting == "another command":
        argv = ["acx", "canon", str(tmp_path / "missing.json")]
    monkeypatch.setattr(sys, "argv", argv)
    code = cli_main.main(argv[1:] if setting == "called in-process" else None)
    assert restarts == []
    assert code == 2 and "missing.json" in capsys.readouterr().err
