"""The agent test: an agent that knows only the MCP tool list and its JSON Schemas stores a sentence,
a repo-bound lesson and a list of three lessons, each in ONE call, finds them, and forgets one.

Every call's arguments are checked against the tool's published input schema before it is sent (an
argument the schema does not name would be a guess the agent cannot make), and calls and bytes are
counted: the figures docs/API.md and the report quote come from here (``AGENT_FIGURES``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from acx.cli.main import main

pytestmark = pytest.mark.e2e

PKG = "agent-notes"
AGENT_FIGURES: dict[str, Any] = {}


class Agent:
    """Calls tools by name with arguments validated against the listed schemas; counts calls and bytes."""

    def __init__(self, client: Any, tools: dict[str, Any]) -> None:
        self.client, self.tools = client, tools
        self.calls = 0
        self.sent = 0
        self.received = 0

    async def call(self, name: str, args: dict[str, Any]) -> tuple[bool, Any, int]:
        schema = self.tools[name].input_schema
        assert set(args) <= set(schema.get("properties") or {}), f"{name}: {set(args)} not in its schema"
        jsonschema.validate(args, schema)
        result = await self.client.call_tool(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        self.calls += 1
        self.sent += len(json.dumps(args).encode())
        self.received += len(text.encode())
        payload = result.structured_content if result.structured_content is not None else text
        return bool(result.is_error), payload, len(text.encode())


def _git_checkout(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        ["git", "-C", str(path), "remote", "add", "origin", "git@github.com:acme/agent-api.git"], check=True
    )
    return path


def test_an_agent_with_only_the_tool_schemas_remembers_finds_and_forgets_in_one_call_each(
    local_stack: Any, acx_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from mcp.client import Client

    from acx.cli.mcp_server import build_server
    from acx.client.memory import Memory
    from acx.core.fingerprint import codebase_fingerprint

    assert main(["login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "agent"]) == 0
    salt_file = tmp_path / "salt"
    monkeypatch.setenv("ACX_SALT_FILE", str(salt_file))
    monkeypatch.chdir(_git_checkout(tmp_path / "checkout"))
    capsys.readouterr()

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(Memory(PKG))) as client:
            listed = (await client.list_tools()).tools
            agent = Agent(client, {t.name: t for t in listed})
            out["tools"] = sorted(agent.tools)
            out["schema_bytes"] = sum(len(json.dumps(t.input_schema)) for t in listed)

            out["sentence"] = await agent.call(
                "remember",
                {"text": "The nightly export fails when the KMS key is disabled; re-enable it first."},
            )
            out["repo"] = await agent.call(
                "remember",
                {"text": "In this repo the integration tests need the docker socket mounted.", "repo": "."},
            )
            out["three"] = await agent.call(
                "remember",
                {
                    "texts": [
                        "Pin boto3 in the layer so cold starts stay under a second.",
                        "The flaky upload test passes with a retry and backoff.",
                        "Reviewers want migrations in their own pull request.",
                    ],
                    "tags": ["team"],
                },
            )
            remember_calls, remember_sent, remember_received = agent.calls, agent.sent, agent.received
            out["per_memory"] = {
                "calls": remember_calls / 5,
                "bytes": (remember_sent + remember_received) / 5,
            }
            out["find_kms"] = await agent.call("search", {"query": "export fails KMS key disabled"})
            out["find_docker"] = await agent.call("search", {"query": "docker socket integration tests"})
            out["find_boto"] = await agent.call("search", {"query": "pin boto3 cold starts", "k": 5})
            out["nothing"] = await agent.call("search", {"query": "zebra herds crossing the savannah"})
            kms_id = out["sentence"][1]["ids"][0]
            out["get"] = await agent.call("get", {"id": kms_id})
            out["forget"] = await agent.call("forget", {"id": kms_id})
            out["after"] = await agent.call("search", {"query": "export fails KMS key disabled"})
            out["again"] = await agent.call(
                "remember",
                {"text": "The nightly export fails when the KMS key is disabled; re-enable it first."},
            )
            out["list"] = await agent.call("list", {})
            out["verify"] = await agent.call("verify_log", {})
            out["calls"] = agent.calls
        return out

    out = anyio.run(session)
    assert out["tools"] == [
        "forget",
        "get",
        "history",
        "invalidate",
        "list",
        "remember",
        "search",
        "update",
        "verify_log",
    ]
    for key in ("sentence", "repo", "three"):
        error, payload, _ = out[key]
        assert not error, payload
    assert len(out["three"][1]["ids"]) == 3 and out["three"][1]["stored"] == 3
    assert out["per_memory"]["calls"] == 0.6  # 3 calls for 5 memories

    # the repo-bound lesson went as a salted fingerprint of the checkout's origin, never its name
    repo_id = out["repo"][1]["ids"][0]
    stored = Memory(PKG).get(repo_id).record
    salt = bytes.fromhex(salt_file.read_text().strip())
    assert stored["portable"] is False and stored["repoId"] is None
    assert stored["codebaseFingerprint"] == codebase_fingerprint(salt, "github.com/acme/agent-api")
    assert "agent-api" not in json.dumps(stored)

    kms_id = out["sentence"][1]["ids"][0]
    for key, wanted in (("find_kms", kms_id), ("find_docker", repo_id)):
        error, payload, _ = out[key]
        assert not error and payload["results"][0]["id"] == wanted
        assert payload["advisory"] and all(
            set(r) <= {"id", "title", "summary", "score", "validFrom"} for r in payload["results"]
        )
    assert out["find_boto"][1]["results"][0]["id"] in out["three"][1]["ids"]
    nothing = out["nothing"][1]
    assert nothing["results"] == [] and "nothing relevant" in nothing["note"]
    assert out["get"][1]["memory"]["id"] == kms_id
    assert not out["forget"][0] and out["forget"][1]["forgotten"] == kms_id
    assert kms_id not in [r["id"] for r in out["after"][1]["results"]]
    error, text, _ = out["again"]
    assert error and "forgotten" in json.dumps(text)  # forget blocks the same knowledge from coming back
    assert kms_id not in [m["id"] for m in out["list"][1]["memories"]]
    assert out["verify"][1]["status"] == "ok"

    AGENT_FIGURES.update(
        mcp_calls_per_memory=out["per_memory"]["calls"],
        mcp_bytes_per_memory=out["per_memory"]["bytes"],
        search_bytes_k5=out["find_boto"][2],
        tool_schema_bytes=out["schema_bytes"],
    )
    print(json.dumps(AGENT_FIGURES))


def test_cli_remembers_a_sentence_in_one_command_and_a_piped_text(
    local_stack: Any, acx_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ACX_SALT_FILE", str(tmp_path / "salt"))
    assert main(["login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "agent-cli"]) == 0
    capsys.readouterr()
    argv = ["remember", "-p", "cli-notes", "Rotate the signing key before the audit, not during it."]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("remembered mem-")
    AGENT_FIGURES.update(cli_calls_per_memory=1, cli_bytes_per_memory=len(" ".join(argv)) + len(out))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("Piped: the queue needs a DLQ alarm.\n"))
    assert main(["remember", "-p", "cli-notes", "--json"]) == 0
    piped = json.loads(capsys.readouterr().out)
    assert piped["accepted"] == 1 and piped["ids"][0].startswith("mem-")
    assert main(["search", "-p", "cli-notes", "DLQ alarm queue", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in found["results"]] == piped["ids"]


def test_an_agent_corrects_a_memory_and_reads_what_held_before(
    local_stack: Any, acx_config: Path, capsys
) -> None:
    from mcp.client import Client

    from acx.cli.mcp_server import build_server
    from acx.client.memory import Memory

    assert main(["login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "agent-v"]) == 0
    capsys.readouterr()
    mem = Memory("versions")

    async def session() -> dict[str, Any]:
        async with Client(build_server(mem)) as client:
            agent = Agent(client, {t.name: t for t in (await client.list_tools()).tools})
            out: dict[str, Any] = {}
            out["remember"] = await agent.call("remember", {"text": "The staging API listens on port 8080."})
            rid = out["remember"][1]["ids"][0]
            out["update"] = await agent.call(
                "update", {"id": rid, "text": "The staging API listens on port 9090 now."}
            )
            out["search"] = await agent.call("search", {"query": "staging API port"})
            out["history"] = await agent.call("history", {"id": rid})
            out["invalidate"] = await agent.call("invalidate", {"id": rid, "reason": "staging is gone"})
            out["rid"] = rid
            return out

    out = anyio.run(session)
    rid = out["rid"]
    assert not out["update"][0], out["update"][1]
    assert [r["summary"] for r in out["search"][1]["results"]] == [
        "The staging API listens on port 9090 now."
    ]
    versions = out["history"][1]["versions"]
    assert [v["summary"] for v in versions] == [
        "The staging API listens on port 8080.",
        "The staging API listens on port 9090 now.",
    ]
    assert versions[0]["validUntil"] == versions[1]["validFrom"] and versions[1]["validUntil"] is None
    assert not out["invalidate"][0], out["invalidate"][1]
    before = mem.get(rid, as_of=versions[0]["validFrom"])
    assert before.summary == "The staging API listens on port 8080."
    assert [v.operation for v in mem.history(rid).versions][-1] != "remember"
    code = main(["history", rid, "-p", "versions"])
    assert code == 0 and "9090" in capsys.readouterr().out


def test_an_agent_sees_candidates_only_on_request_marked_and_under_the_banner(
    local_stack: Any, acx_config: Path, capsys
) -> None:
    """Under ``review: required`` an agent's own lesson is a candidate: the default search and list
    leave it out (denial); asked for with ``trust``, it comes back marked ``trust: candidate`` under
    a banner that says the answer holds unreviewed memories (positive control)."""
    from mcp.client import Client

    from acx.cli.mcp_server import build_server
    from acx.client.memory import Memory
    from tests.http import send_json

    package = "agent-candidates"
    assert main(["login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "agent"]) == 0
    capsys.readouterr()
    admin = local_stack.token("agent", ("admin",))
    status, body = send_json(
        f"{local_stack.endpoint}/v1/packages/{package}/policy",
        "PUT",
        token=admin,
        body={"review": "required"},
    )
    assert status == 200, body

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(Memory(package))) as client:
            agent = Agent(client, {t.name: t for t in (await client.list_tools()).tools})
            text = "Rotate the staging signing key before the quarterly audit."
            out["remember"] = await agent.call("remember", {"text": text})
            query = "rotate staging signing key audit"
            out["search"] = await agent.call("search", {"query": query})
            out["search_any"] = await agent.call("search", {"query": query, "trust": "any"})
            out["list"] = await agent.call("list", {})
            out["list_any"] = await agent.call("list", {"trust": "candidate"})
            rid = out["remember"][1]["ids"][0]
            out["get"] = await agent.call("get", {"id": rid})
            out["get_any"] = await agent.call("get", {"id": rid, "trust": "any"})
        return out

    out = anyio.run(session)
    rid = out["remember"][1]["ids"][0]
    assert out["search"][1]["results"] == [] and "candidates" not in out["search"][1]["advisory"]
    assert out["list"][1]["memories"] == [] and out["get"][0]  # a candidate is not served by default
    for key, field in (("search_any", "results"), ("list_any", "memories")):
        error, payload, _ = out[key]
        assert not error and [(r["id"], r["trust"]) for r in payload[field]] == [(rid, "candidate")]
        assert "candidates" in payload["advisory"], payload["advisory"]
    error, got, _ = out["get_any"]
    assert not error and got["memory"]["trust"] == "candidate" and "candidates" in got["advisory"]
