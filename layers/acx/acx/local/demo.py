"""`make demo`: the whole mission on the local stack, driven by the `acx` client over HTTP.

Each step prints the command a user would type and what it answered; the demo exits non-zero when
any step does not do what it should. Outputs land in demo-out/.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "agent-package"
PACKAGE = "platform-agent"
BULK_PACKAGE = "bulk-observations"
# A planted credential for the scrub-gate step: built at run time so no scanner flags this file.
PLANTED = "AKIA" + "Z7Q4" + "MPLE" + "K3XD" + "W9QA"


class DemoFailed(Exception):
    pass


class Demo:
    def __init__(self, out: Path, env: dict[str, str]) -> None:
        self.out = out
        self.env = env
        self.step_no = 0
        self.failures: list[str] = []

    def step(self, title: str) -> None:
        self.step_no += 1
        print(f"\n\033[1m{self.step_no:>2}. {title}\033[0m", flush=True)

    def acx(
        self, *args: str, expect: int | Sequence[int] = 0, show: bool = True
    ) -> subprocess.CompletedProcess:
        """Run the real `acx` console script, print what a user would see, check the exit code."""
        shown = " ".join(a if " " not in a else repr(a) for a in args)
        print(f"   $ acx {shown}", flush=True)
        acx_bin = Path(sys.executable).with_name("acx")
        cmd = [
            str(acx_bin) if acx_bin.exists() else sys.executable,
            *([] if acx_bin.exists() else ["-m", "acx.cli.main"]),
            *args,
        ]
        proc = subprocess.run(  # noqa: S603 - runs this venv's own acx with fixed arguments
            cmd, capture_output=True, text=True, env=self.env, timeout=600, check=False
        )
        if show:
            for line in (proc.stdout.rstrip() + "\n" + proc.stderr.rstrip()).strip().splitlines()[:40]:
                print(f"     {line}")
        wanted = (expect,) if isinstance(expect, int) else tuple(expect)
        if proc.returncode not in wanted:
            raise DemoFailed(f"`acx {shown}` exited {proc.returncode}, expected {wanted}")
        return proc

    def check(self, ok: bool, what: str) -> None:
        mark = "\033[32mok\033[0m" if ok else "\033[31mFAILED\033[0m"
        print(f"   [{mark}] {what}", flush=True)
        if not ok:
            raise DemoFailed(what)


def _json(proc: subprocess.CompletedProcess) -> Any:
    return json.loads(proc.stdout)


def _large_bundle(path: Path, n: int, salt: bytes) -> None:
    """A bundle over the 5 MiB inline limit, so the client switches to a presigned upload."""
    rng = random.Random(7)
    words = ("cache", "retry", "queue", "index", "schema", "deploy", "latency", "shard", "lease", "quota")
    records = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(150))
        records.append(
            {
                "id": f"bulk-{i:06d}",
                "title": f"Observation {i}: {rng.choice(words)} behaviour",
                "summary": text,
                "sourceType": "observation",
                "repoId": None,
                "repoLabel": "platform",
                "projectLabel": "bulk",
                "timestamp": "2026-08-01T00:00:00Z",
                "impact": "neutral",
                "xpAwarded": i % 7,
                "tags": ["bulk", rng.choice(words)],
                "portable": True,
                "codebaseFingerprint": None,
            }
        )
    bundle = {"schemaVersion": "acx.memory-bundle/1", "records": records, "knowledge": [], "skills": []}
    path.write_text(json.dumps(bundle))


def run(out: Path) -> int:
    from acx.local.stack import LocalStack

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    home = Path(tempfile.mkdtemp(prefix="acx-demo-home-"))
    print("Starting the local stack (embedded backend on 127.0.0.1)...", flush=True)
    with LocalStack(port=0, quiet=True, log_file=out / "stack.log") as stack:
        env = {
            **os.environ,
            "ACX_CONFIG": str(home / "config.json"),
            "NO_COLOR": "1",
            "ACX_SALT_FILE": str(out / "installation.salt"),
        }
        demo = Demo(out, env)
        print(f"   API endpoint: {stack.endpoint}   (data: {stack.data_dir})")
        print(f"   service logs and access log: {out / 'stack.log'}")
        try:
            _walk(demo, stack, out)
        except DemoFailed as exc:
            print(f"\n\033[31mdemo failed: {exc}\033[0m")
            return 1
    print(f"\n\033[1mDone.\033[0m Everything the demo produced is in {out}/:")
    for item in sorted(out.iterdir()):
        print(f"   {item.name:<28} {item.stat().st_size:>10,} bytes")
    return 0


def _walk(demo: Demo, stack: Any, out: Path) -> None:
    salt = out / "installation.salt"
    demo.step("Create an installation salt (never leaves this machine; keys codebase fingerprints)")
    demo.acx("init", "--salt-file", str(salt))
    demo.check(oct(salt.stat().st_mode & 0o777) == "0o600", "salt file is private (0600)")

    demo.step("Log in to the local stack as tenant 'demo' (dev token from the local issuer)")
    demo.acx("login", "--local", "--endpoint", stack.endpoint, "--tenant", "demo", show=False)
    print("     (token stored in the CLI config)")

    demo.step("Pack an agent package directory into an upload bundle")
    bundle = out / "bundle.json"
    demo.acx("bundle", str(EXAMPLE), "-o", str(bundle), "--salt-file", str(salt))
    records = json.loads(bundle.read_text())["records"]
    demo.check(any(r["portable"] is False for r in records), "the repo-bound record became field-learned")

    demo.step("Upload it inline: validated, scrubbed, merged and receipted before the answer")
    first = _json(demo.acx("upload", str(bundle), "--package", PACKAGE, "--json"))
    demo.check(first["accepted"] == len(records), f"{first['accepted']} records accepted")
    demo.acx("upload", str(bundle), "--package", PACKAGE)
    print("     (the same bundle again changes nothing and appends nothing to the log)")

    demo.step("Upload a large bundle (> 5 MiB) to a second package through a presigned S3 PUT")
    large = out / "large-bundle.json"
    _large_bundle(large, 5200, salt.read_bytes())
    print(f"     ({large.stat().st_size / 1e6:.1f} MB, 5,200 records)")
    started = time.perf_counter()
    result = _json(demo.acx("upload", str(large), "--package", BULK_PACKAGE, "--json", show=False))
    demo.check(
        result.get("status") == "ingested",
        f"ingested by the ingest function in "
        f"{time.perf_counter() - started:.1f}s: {result.get('summary', {}).get('accepted')} accepted",
    )
    large.unlink()

    demo.step("A poisoned bundle: the scrub gate refuses it whole and never echoes the secret")
    poisoned = out / "poisoned-bundle.json"
    doc = json.loads(bundle.read_text())
    doc["records"] = [
        dict(doc["records"][0], id="mem-leak", summary=f"deploy with key {PLANTED} then rotate")
    ]
    poisoned.write_text(json.dumps(doc))
    proc = demo.acx("upload", str(poisoned), "--package", PACKAGE, expect=3)
    demo.check(
        PLANTED not in proc.stdout + proc.stderr and PLANTED[4:] not in proc.stdout + proc.stderr,
        "the report names rule, record and offset, not the key",
    )
    poisoned.unlink()

    demo.step("Recall: a page of memories, always under the advisory banner")
    recall = _json(demo.acx("recall", "--package", PACKAGE, "--limit", "3", "--json", show=False))
    demo.acx("recall", "--package", PACKAGE, "--limit", "3")
    demo.check(bool(recall.get("advisory")) and len(recall["records"]) == 3, "advisory banner and 3 records")

    demo.step("Forget a memory: tombstone in the log, plaintext erased everywhere")
    demo.acx("forget", "mem-0005", "--package", PACKAGE)
    demo.acx("upload", str(bundle), "--package", PACKAGE, expect=2)
    print("     (re-uploading the forgotten memory is refused: 409, naming the tombstone)")

    demo.step("Verify the log: every link, every receipt, the signed checkpoint, the witness")
    stack.run_verification_now()
    verified = _json(demo.acx("log", "verify", "--package", PACKAGE, "--json", show=False))
    demo.acx("log", "verify", "--package", PACKAGE)
    demo.check(verified.get("status") == "ok", "log verifies ok")
    demo.acx(
        "log",
        "show",
        "--package",
        PACKAGE,
        "--out-checkpoint",
        str(out / "checkpoint"),
        "--out-vkey",
        str(out / "checkpoint.vkey"),
    )

    demo.step("Export a signed cartridge (KMS Ed25519), field-learned records quarantined")
    exported = _json(demo.acx("export", "--package", PACKAGE, "--wait", "--json", show=False))
    demo.check(
        exported.get("status") == "ready",
        f"cartridge {exported.get('cartridgeId')} ready, {exported.get('fieldLearned')}",
    )
    cartridge = out / f"{PACKAGE}.acx"

    demo.step("Download it through a short-lived presigned URL")
    demo.acx("download", exported["cartridgeId"], "--package", PACKAGE, "-o", str(cartridge))

    demo.step("Verify it offline with only the service's public keys")
    from urllib.request import urlopen

    with urlopen(f"{stack.endpoint}/v1/trust-registry", timeout=30) as resp:  # noqa: S310 - local stack
        (out / "trust-registry.json").write_bytes(resp.read())
    demo.acx("inspect", str(cartridge))
    demo.acx("verify", str(cartridge), "--registry", str(out / "trust-registry.json"))
    print("     (exit 0: trusted, signed by a key in the registry)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="demo-out", type=Path)
    args = parser.parse_args(argv)
    return run(args.out)


if __name__ == "__main__":
    sys.exit(main())
