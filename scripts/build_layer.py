"""Build the Lambda layer zip (python3.12, arm64) without Docker and without SAM.

    python scripts/build_layer.py            # -> build/acx-layer.zip, prints sizes as JSON

Steps: `pip install --target build/layer/python` of layers/acx/requirements.txt for
manylinux2014_aarch64 / CPython 3.12 wheels only, pinned by constraints.txt (if a pinned version has
no such wheel, the install is retried without the pins, and that is reported); copy the `acx`
package; drop what the Lambda runtime already provides (boto3, botocore and their dependencies: a
second botocore in /opt/python would shadow the runtime's and could mismatch its boto3) and what is
never imported (__pycache__, tests, dist-info RECORDs, console scripts); compile every module with
CPython 3.12 into unchecked-hash ``.pyc`` files (``compile_for_runtime``); zip deterministically.

Why the ``.pyc`` files: Lambda mounts a layer read-only at /opt, so Python cannot write bytecode
caches there and compiles every layer module it imports, in every cold start (the local benches
never see this: their caches are warm). Unchecked-hash files are loaded without looking at the
source's mtime (the zip's are all 1980). Without a 3.12 interpreter the layer is built without
them, and the summary says so (``compiled: false``). `sam build` runs the same steps through
layers/acx/Makefile (``--site``), so a stack deployed either way ships the same files.

The layer holds the server side only: ``acx.cli``, ``acx.client`` and ``acx.local`` stay out
(``CLIENT_ONLY``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER_SRC = ROOT / "layers" / "acx"
REQUIREMENTS = LAYER_SRC / "requirements.txt"
CONSTRAINTS = ROOT / "constraints.txt"
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
# Provided by the python3.12 Lambda runtime; never vendored (see module docstring).
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")
JUNK_DIRS = {"__pycache__", "tests", "test"}
# Parts of the `acx` package that Lambda never runs: the client (CLI, MCP server, Python client) and
# the local stack. The layer holds what the functions import; a test checks that no server module
# imports these.
CLIENT_ONLY = ("cli", "client", "local")
JUNK_DIST_INFO_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class LayerBuild:
    """What was built: the zip, its size, the unzipped size and whether the pins were relaxed."""

    zip_path: str
    zipped_bytes: int
    unzipped_bytes: int
    files: int
    relaxed_constraints: bool
    compiled: bool = False  # every module has a CPython 3.12 unchecked-hash .pyc beside it


def pip_install(target: Path, *, constraints: Path | None) -> subprocess.CompletedProcess[str]:
    """pip install the layer requirements as arm64 / cp312 binary wheels into `target`."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(target),
        "--platform",
        PLATFORM,
        # google-re2 ships its arm64 wheels as manylinux_2_28 (glibc 2.28); the python3.12 runtime
        # (Amazon Linux 2023, glibc 2.34) runs them.
        "--platform",
        "manylinux_2_28_aarch64",
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "-r",
        str(REQUIREMENTS),
    ]
    if constraints is not None:
        cmd += ["-c", str(constraints)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603


def strip(site: Path) -> None:
    """Remove runtime-provided packages and files Lambda never imports."""
    for entry in list(site.iterdir()):
        name = entry.name
        base = name.split("-", 1)[0].lower().replace("python_", "")
        if base in RUNTIME_PROVIDED and (entry.is_dir() or name.endswith(".py")):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for path in sorted(site.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if not path.exists():
            continue
        if path.is_dir() and (path.name in JUNK_DIRS or (path.name == "bin" and path.parent == site)):
            shutil.rmtree(path)
        elif path.is_file() and (
            path.suffix in (".pyc", ".pyo")
            or (path.parent.name.endswith(".dist-info") and path.name in JUNK_DIST_INFO_FILES)
        ):
            path.unlink()


def _package_ignore(directory: str, names: list[str]) -> set[str]:
    junk = {n for n in names if n in ("__pycache__", "tests") or n.endswith(".pyc")}
    if Path(directory) == LAYER_SRC / "acx":
        junk |= {n for n in names if n in CLIENT_ONLY}
    return junk


def copy_package(site: Path) -> None:
    """Copy the server side of the `acx` package (the layer's own code) next to its dependencies."""
    shutil.copytree(LAYER_SRC / "acx", site / "acx", ignore=_package_ignore, dirs_exist_ok=True)


def runtime_python() -> str | None:
    """A CPython 3.12 interpreter (the runtime's bytecode version): ``ACX_LAYER_PYTHON``, then
    ``python3.12`` on PATH, then pyenv's; None when there is none."""
    for candidate in (
        os.environ.get("ACX_LAYER_PYTHON"),
        shutil.which("python3.12"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")), reverse=True),
    ):
        if not candidate or not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run(  # noqa: S603
            [candidate, "-c", "import sys; print(sys.implementation.name, sys.version_info[:2] == (3, 12))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.split() == ["cpython", "True"]:
            return candidate
    return None


def compile_for_runtime(site: Path, python: str) -> None:
    """Write ``__pycache__/*.cpython-312.pyc`` for every module under ``site``: unchecked-hash (valid
    whatever the file times), named as Lambda sees them (``/opt/python/...`` in tracebacks)."""
    cmd = [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    cmd += ["-s", str(site), "-p", "/opt/python", str(site)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise RuntimeError(f"compileall failed:\n{(result.stdout + result.stderr)[-4000:]}")


def zip_dir(root: Path, zip_path: Path) -> tuple[int, int]:
    """Zip `root` (its `python/` folder at the zip's top) deterministically; (files, unzipped bytes)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    unzipped = 0
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in files:
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            data = path.read_bytes()
            unzipped += len(data)
            zf.writestr(info, data, compresslevel=9)
    return len(files), unzipped


def fill_site(site: Path, *, install: bool, python: str | None) -> tuple[bool, bool]:
    """Install, copy, strip and compile the layer's ``python/`` folder; (relaxed pins, compiled)."""
    relaxed = False
    if install:
        result = pip_install(site, constraints=CONSTRAINTS if CONSTRAINTS.exists() else None)
        if result.returncode != 0:
            # A pinned version without a cp312/aarch64 wheel: take the newest that has one.
            print(
                "pinned install failed, retrying without constraints:\n" + result.stderr[-2000:],
                file=sys.stderr,
            )
            shutil.rmtree(site)
            site.mkdir(parents=True)
            relaxed = True
            result = pip_install(site, constraints=None)
            if result.returncode != 0:
                raise RuntimeError(f"pip install for the layer failed:\n{result.stderr[-4000:]}")
    copy_package(site)
    strip(site)
    compiler = runtime_python() if python == "auto" else python
    if compiler is not None:
        compile_for_runtime(site, compiler)
    return relaxed, compiler is not None


def build(out_dir: Path = ROOT / "build", *, install: bool = True, python: str | None = "auto") -> LayerBuild:
    """Build `<out_dir>/acx-layer.zip` from `<out_dir>/layer/python/`; returns the sizes.

    ``python``: the 3.12 interpreter that compiles the modules ("auto": ``runtime_python()``; None:
    no .pyc files)."""
    layer_root = out_dir / "layer"
    site = layer_root / "python"
    if layer_root.exists():
        shutil.rmtree(layer_root)
    site.mkdir(parents=True)
    relaxed, compiled = fill_site(site, install=install, python=python)
    zip_path = out_dir / "acx-layer.zip"
    if zip_path.exists():
        zip_path.unlink()
    files, unzipped = zip_dir(layer_root, zip_path)
    return LayerBuild(str(zip_path), zip_path.stat().st_size, unzipped, files, relaxed, compiled)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: build the layer and print its sizes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "build", help="output folder (default: build/)")
    parser.add_argument("--no-install", action="store_true", help="package acx only (no pip, offline)")
    parser.add_argument(
        "--site",
        type=Path,
        help="fill this python/ folder and stop (no zip): what `sam build` runs, via layers/acx/Makefile",
    )
    args = parser.parse_args(argv)
    if args.site is not None:
        args.site.mkdir(parents=True, exist_ok=True)
        relaxed, compiled = fill_site(args.site, install=not args.no_install, python="auto")
        print(json.dumps({"site": str(args.site), "relaxed_constraints": relaxed, "compiled": compiled}))
        return 0
    built = build(args.out, install=not args.no_install)
    summary = {
        **asdict(built),
        "zipped_mb": round(built.zipped_bytes / 1e6, 3),
        "unzipped_mb": round(built.unzipped_bytes / 1e6, 3),
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
