"""The ACX reference implementation (Node) as a subprocess peer: ``reference`` runs its CLI.

Node 22 comes from ``../shared/peers/setup-node.sh`` (idempotent; ``.ci/run`` calls it first). Where
Node or the peer cannot be found the interop tests skip with the reason, except under ``CI=true``,
where they fail: CI must never pass without having run them.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

PEERS = Path(os.environ.get("ACX_PEERS_DIR", ROOT.parent / "shared" / "peers"))
REFERENCE_CLI = PEERS / "acx-reference" / "src" / "cli.mjs"
SETUP_NODE = PEERS / "setup-node.sh"
TIMEOUT = 300


@dataclass(frozen=True)
class Run:
    """One reference CLI run: exit code and output."""

    code: int
    out: str
    err: str

    def field(self, name: str) -> str | None:
        """The value of a ``name: value`` line of the reference's output."""
        for line in self.out.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == name:
                return value.strip()
        return None


@dataclass(frozen=True)
class Reference:
    """The reference CLI under one Node binary."""

    node: str

    def run(self, *args: str | Path) -> Run:
        proc = subprocess.run(
            [self.node, "--experimental-sqlite", "--no-warnings", str(REFERENCE_CLI), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def verify(self, cartridge: Path, registry: dict[str, Any] | None, tmp: Path) -> Run:
        if registry is None:
            return self.run("verify", cartridge)
        reg = tmp / f"{cartridge.stem}.registry.json"
        reg.write_text(json.dumps(registry), encoding="utf-8")
        return self.run("verify", cartridge, "--registry", reg)

    def node_eval(self, script: str, *args: str) -> Run:
        """Run an ES module snippet with the reference's ``src`` importable as ``REF``."""
        src = (REFERENCE_CLI.parent).as_uri()
        proc = subprocess.run(
            [
                self.node,
                "--experimental-sqlite",
                "--no-warnings",
                "--input-type=module",
                "-e",
                script.replace("REF/", src + "/"),
                "--",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"interop tests cannot run in CI: {reason}")
    pytest.skip(f"ACX reference not runnable here ({reason}); run ../shared/peers/setup-node.sh")


@pytest.fixture(scope="session")
def reference() -> Reference:
    if not REFERENCE_CLI.is_file() or not SETUP_NODE.is_file():
        _unavailable(f"no reference at {REFERENCE_CLI.parent.parent}")
    node = os.environ.get("ACX_PEER_NODE")
    if not node:
        try:
            proc = subprocess.run(
                ["bash", str(SETUP_NODE)], capture_output=True, text=True, timeout=600, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"setup-node.sh failed: {exc}")
        if proc.returncode != 0 or not proc.stdout.strip():
            _unavailable(f"setup-node.sh exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        node = proc.stdout.strip().splitlines()[-1]
    ref = Reference(node)
    version = ref.run("--version")
    if version.code != 0:
        _unavailable(f"the reference does not start under {node}: {version.err.strip()[-300:]}")
    return ref
