"""Two agents and a reviewer on the local stack over HTTP, through the CLI: dev tokens with `--sub` and
`--agent`, a package that requires review, `acx recall --trust`, and `acx review` fed by a pipe (the
author's own token is refused beside the reviewer's approval)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acx.cli.main import main
from tests.factories import bundle_json, memory

pytestmark = pytest.mark.e2e

TENANT = "review-e2e"
PKG = "reviewed"


def acx(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def login(capsys: pytest.CaptureFixture[str], stack: Any, *extra: str) -> None:
    code, _, err = acx(
        capsys, "login", "--endpoint", stack.endpoint, "--local", "--tenant", TENANT, "--package", PKG, *extra
    )
    assert code == 0, err


def test_an_agents_candidate_waits_for_a_reviewer_and_its_own_token_cannot_approve_it(
    local_stack: Any,
    acx_config: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    login(capsys, local_stack, "--sub", "agent-1", "--agent", "bot-1")
    upload = tmp_path / "b.json"
    upload.write_bytes(
        bundle_json([memory("seed-1", title="Believed at first", summary="Before the policy.")])
    )
    assert acx(capsys, "upload", str(upload))[0] == 0
    token = local_stack.token(TENANT, ("admin",))
    from tests.e2e.test_auth_matrix import http

    status, raw = http(local_stack, "PUT", f"/v1/packages/{PKG}/policy", token, {"review": "required"})
    assert status == 200, raw
    upload.write_bytes(bundle_json([memory("cand-1", title="Needs review", summary="Written by bot-1.")]))
    assert acx(capsys, "upload", str(upload))[0] == 0

    code, out, _ = acx(capsys, "recall", "--json")
    assert [r["id"] for r in json.loads(out)["records"]] == ["seed-1"]  # beliefs only
    code, out, _ = acx(capsys, "recall", "--json", "--trust", "any", "--agent", "bot-1")
    page = json.loads(out)
    assert {m["id"]: m["trust"] for m in page["meta"]} == {"seed-1": "belief", "cand-1": "candidate"}

    # denial: the author's own login, with memory:review, is refused by the service
    login(capsys, local_stack, "--sub", "agent-1", "--agent", "bot-1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    code, out, _ = acx(capsys, "review", "--json")
    assert code == 0 and json.loads(out[out.index("{\n") :])["refused"] == 1
    # positive control: a reviewer (another subject) approves with one key
    login(capsys, local_stack, "--sub", "alice", "--scopes", "memory:review", "memory:read", "log:read")
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    code, out, _ = acx(capsys, "review", "--json")
    assert code == 0 and json.loads(out[out.index("{\n") :])["approve"] == 1
    status, raw = http(
        local_stack, "GET", f"/v1/packages/{PKG}/log/entries", local_stack.token(TENANT, ("log:read",))
    )
    last = json.loads(raw)["entries"][-1]
    assert (last["operation"], last["decision"], last["actor"]) == ("review", "approve", f"{TENANT}/alice")


EDITOR_SCRIPT = """
import json, sys
path = sys.argv[1]
record = json.load(open(path, encoding="utf-8"))
record["title"] = "Pin the runner image by digest"
json.dump(record, open(path, "w", encoding="utf-8"))
"""


def test_a_reviewer_edits_a_candidate_in_the_editor_and_the_correction_is_the_belief(
    local_stack: Any,
    acx_config: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    package = "edited"
    admin = local_stack.token(TENANT, ("admin",))
    from tests.e2e.test_auth_matrix import http

    status, raw = http(local_stack, "PUT", f"/v1/packages/{package}/policy", admin, {"review": "required"})
    assert status == 200, raw
    login(capsys, local_stack, "--sub", "agent-1", "--agent", "bot-1", "--package", package)
    upload = tmp_path / "b.json"
    upload.write_bytes(bundle_json([memory("cand-2", title="Pin the runner imag", summary="By tag.")]))
    assert acx(capsys, "upload", str(upload))[0] == 0
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)

    # denial: the author's own token edits in its editor, and the service refuses the approval
    monkeypatch.setattr(sys, "stdin", io.StringIO("e\n"))
    code, out, _ = acx(capsys, "review", "--json", "--package", package)
    assert code == 0 and json.loads(out[out.index("{\n") :])["refused"] == 1
    # positive control: a reviewer's edit supersedes the candidate and approves the correction
    login(capsys, local_stack, "--sub", "alice", "--scopes", "memory:review", "memory:read", "log:read")
    monkeypatch.setattr(sys, "stdin", io.StringIO("e\n"))
    code, out, _ = acx(capsys, "review", "--json", "--package", package)
    assert code == 0 and json.loads(out[out.index("{\n") :])["edit"] == 1, out
    code, out, _ = acx(capsys, "recall", "--json", "--package", package)
    assert [r["title"] for r in json.loads(out)["records"]] == ["Pin the runner image by digest"]
    status, raw = http(
        local_stack, "GET", f"/v1/packages/{package}/log/entries", local_stack.token(TENANT, ("log:read",))
    )
    ops = [(e["operation"], e.get("decision"), e["actor"]) for e in json.loads(raw)["entries"][-2:]]
    assert ops == [("supersede", None, f"{TENANT}/alice"), ("review", "approve", f"{TENANT}/alice")]
