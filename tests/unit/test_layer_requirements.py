"""layers/acx/requirements.txt pins exactly what constraints.txt pins, so `sam build` matches `make layer`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "layer_requirements", ROOT / "scripts" / "layer_requirements.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_layer_requirements_are_the_constraints_pins() -> None:
    script = _script()
    text = (ROOT / "layers" / "acx" / "requirements.txt").read_text()
    assert text == script.render(), "run `make layer-requirements`"
    pins = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert all("==" in line for line in pins)
    names = {line.split("==")[0] for line in pins}
    assert {
        "pydantic",
        "pydantic-core",
        "rfc8785",
        "orjson",
        "cryptography",
        "aws-lambda-powertools",
    } <= names
    assert not names & {"boto3", "botocore"}


def test_a_changed_pin_is_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    changed = tmp_path / "constraints.txt"
    changed.write_text((ROOT / "constraints.txt").read_text().replace("orjson==", "orjson==0.0.0+"))
    monkeypatch.setattr(script, "CONSTRAINTS", changed)
    assert script.main(["--check"]) == 1
    monkeypatch.setattr(script, "CONSTRAINTS", ROOT / "constraints.txt")
    assert script.main(["--check"]) == 0
