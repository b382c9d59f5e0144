"""What a cold search imports: snowballstemmer's English stemmer alone (not its 33 other languages),
with the very stems the package gives. The import checks run in a fresh interpreter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import snowballstemmer

from acx.core.search import text

ROOT = Path(__file__).resolve().parents[4]
CRANFIELD = ROOT.parent / "shared" / "corpora" / "ir-cranfield.json"

# Porter2's own edge cases (its published examples and exceptions) and everyday words.
WORDS = """consign consigned consigning consignment consist consisted consistency consistent
consistently consisting consists consolation consolations generous generously generate generator
skis skies dying lying tying news innings outing canning howe proceed exceed succeed cried ties
gas this kiwi hoping hopping fluently agreed feed sky communism communist commune united arsenal
arsen caresses ponies caress cats flies died agreement happily relational conditional rational
valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization
predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti
triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference
airliner gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou
communism activate angulariti homologous effective bowdlerize dial dials dialled dialling 1960s
aerodynamic supersonic boundary-layer""".split()


def _package_stem() -> object:
    return snowballstemmer.stemmer("english").stemWord


# Private: text._english_alone and text._english_stemmer are the cold and warm loaders; which one a
# process uses shows in no answer, only in what it imports.
def test_the_english_stemmer_alone_stems_as_the_package_does() -> None:
    loaded = text._english_alone(list(snowballstemmer.__path__))  # the modules alone, as a cold start
    package = _package_stem()
    assert type(loaded.__self__).__module__ == f"{text.SNOWBALL_ALIAS}.english_stemmer"  # type: ignore[attr-defined]
    words = list(WORDS)
    if CRANFIELD.exists():  # every word of the test collection the bench measures quality on
        docs = json.loads(CRANFIELD.read_text())["docs"]
        words += sorted({w for d in docs for w in re.findall(r"[a-z]+", d["text"].lower())})
    assert len(words) > 100
    assert [loaded(w) for w in words] == [package(w) for w in words]  # type: ignore[operator]
    assert text.STEMMER == "snowball-english"


def test_a_cold_search_imports_no_other_language() -> None:
    child = (
        "import sys, json\n"
        "import acx.core.search, acx.usecases.search\n"
        "from acx.core.search.text import tokenize\n"
        "print(json.dumps({'mods': sorted(m for m in sys.modules if 'snowball' in m or m == 'Stemmer'),"
        " 'terms': tokenize('Generously running flows over the skies')}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "acx")}
    proc = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    alias = text.SNOWBALL_ALIAS
    assert out["mods"] == sorted(
        [alias, f"{alias}.among", f"{alias}.basestemmer", f"{alias}.english_stemmer"]
    )
    assert out["terms"] == ["generous", "run", "flow", "sky"]


@pytest.mark.parametrize("word", ["running", "skies", "generously"])
def test_a_process_that_imported_the_package_uses_it(word: str) -> None:
    # snowballstemmer already imported (as in this test process): its own stemmer, same stems.
    assert "snowballstemmer" in sys.modules
    assert text._english_stemmer()(word) == _package_stem()(word)  # type: ignore[operator]


def test_a_cold_search_path_imports_neither_boto3_nor_every_contract_model() -> None:
    # What a search's first request builds and imports, in a fresh Lambda-like process (no boto3
    # default session): the handler's init, the S3 and DynamoDB clients, the search modules. Nor
    # cryptography: a search neither signs nor verifies (acx.core.signing imports it where it does).
    child = (
        "import sys, json\n"
        "sys.path.insert(0, 'functions/api')\n"
        "import app\n"
        "from acx.usecases.deps import deps\n"
        "import acx.usecases.search, acx.core.search.ranking, acx.adapters.search_index\n"
        "d = deps()\n"
        "s3 = d.data.s3.resolve()\n"
        "from acx.adapters.aws import client\n"
        "client('dynamodb')\n"
        "print(json.dumps({'s3': s3.meta.service_model.service_name,"
        " 'mods': [m for m in ('boto3', 's3transfer', 'acx.contract.models', 'snowballstemmer',"
        " 'cryptography') if m in sys.modules]}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "layers" / "acx"),
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    proc = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"s3": "s3", "mods": []}


@pytest.mark.parametrize(("preset", "expected"), [(None, "__all__"), ("", "")])
def test_in_lambda_the_api_function_skips_pydantics_plugin_scan(preset: str | None, expected: str) -> None:
    # pydantic reads every installed distribution's entry points for plugins unless told not to; the
    # api function (in Lambda: AWS_LAMBDA_FUNCTION_NAME set) tells it, unless the operator already did.
    child = (
        "import json, os, sys\n"
        "import importlib.metadata as md\n"
        "scans = []\n"
        "real = md.entry_points\n"
        "md.entry_points = lambda **kw: scans.append(kw) or real(**kw)\n"
        "sys.path.insert(0, 'functions/api')\n"
        "import app\n"
        "print(json.dumps({'env': os.environ.get('PYDANTIC_DISABLE_PLUGINS'), 'scans': scans}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "acx"), "AWS_LAMBDA_FUNCTION_NAME": "acx-api"}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    if preset is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = preset
    proc = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["env"] == expected
    assert (out["scans"] == []) == (expected == "__all__")
