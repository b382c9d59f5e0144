"""`acx search` and `acx mcp` against the local stack over HTTP; MCP through the SDK's own stdio client."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import acx
from acx.cli.main import main
from tests.factories import memory

pytestmark = pytest.mark.e2e

PKG = "mcp-notes"
SECRET = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"  # built at run time: no scanner flags this file


def _record(rid: str, title: str, summary: str) -> dict[str, Any]:
    return memory(
        rid,
        title=title,
        summary=summary,
        sourceType="observation",
        repoLabel="platform",
        projectLabel="mcp",
        timestamp="2026-08-01T00:00:00Z",
        tags=["mcp"],
    )


def _acx(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _login(capsys: pytest.CaptureFixture[str], endpoint: str) -> None:
    assert _acx(capsys, "login", "--local", "--endpoint", endpoint, "--tenant", "mcp")[0] == 0


def test_acx_search_prints_a_table_and_json(
    local_stack: Any, acx_config: Path, capsys, tmp_path: Path
) -> None:
    _login(capsys, local_stack.endpoint)
    bundle = tmp_path / "b.json"
    records = [
        _record("s-1", "Heron cache eviction", "Evict the heron cache by age, not size."),
        _record("s-2", "Queue retries", "Retry the consumer with jitter."),
    ]
    bundle.write_text(json.dumps({"schemaVersion": "acx.memory-bundle/1", "records": records}))
    assert _acx(capsys, "upload", str(bundle), "-p", "cli-search")[0] == 0
    code, out, _ = _acx(capsys, "search", "heron cache", "-p", "cli-search")
    assert code == 0 and "[advisory]" in out and "s-1" in out and "Heron cache eviction" in out
    code, out, _ = _acx(capsys, "search", "heron cache", "-p", "cli-search", "--json", "-k", "1")
    body = json.loads(out)
    assert code == 0 and [r["id"] for r in body["results"]] == ["s-1"] and body["advisory"]
    code, _, err = _acx(capsys, "search", "heron", "-p", "cli-search", "-k", "99")
    assert code == 2 and "1 to 50" in err and "$.k" in err


async def _mcp_session(config: Path, calls: Any) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "acx.cli.main", "mcp", "-p", PKG],
        # this checkout's acx, not whichever one the interpreter has installed
        env={"ACX_CONFIG": str(config), "PYTHONPATH": str(Path(acx.__file__).resolve().parents[1])},
    )
    with open(config.with_suffix(".mcp-stderr.log"), "w") as errlog:  # a real file: capsys has no fileno
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await calls(session)


def _payload(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_mcp_tools_over_stdio_with_the_sdk_client(local_stack: Any, acx_config: Path, capsys) -> None:
    _login(capsys, local_stack.endpoint)

    async def calls(session: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        out["remember"] = await session.call_tool(
            "remember",
            {
                "texts": [
                    "Freeze osprey deploys during the audit window.",
                    "Keep the layer small: numpy only where it pays.",
                ]
            },
        )
        out["secret"] = await session.call_tool("remember", {"text": f"use {SECRET} to deploy"})
        out["invalid"] = await session.call_tool("remember", {"text": "x", "impact": "great"})
        out["search"] = await session.call_tool("search", {"query": "osprey deploys", "k": 3})
        out["bad_search"] = await session.call_tool("search", {"query": "osprey", "k": 0})
        ids = _payload(out["remember"])["ids"]
        out["get"] = await session.call_tool("get", {"id": ids[1]})
        out["forget"] = await session.call_tool("forget", {"id": ids[0]})
        out["after"] = await session.call_tool("search", {"query": "osprey deploys", "k": 3})
        out["get_forgotten"] = await session.call_tool("get", {"id": ids[0]})
        out["verify"] = await session.call_tool("verify_log", {})
        return out

    out = anyio.run(_mcp_session, acx_config, calls)
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
    assert not out["remember"].is_error and _payload(out["remember"])["stored"] == 2
    first, second = _payload(out["remember"])["ids"]
    secret = out["secret"]
    text = json.dumps([c.model_dump() for c in secret.content])
    assert secret.is_error and "blocked" in text and SECRET not in text  # the reason, never the secret
    assert out["invalid"].is_error and "impact" in json.dumps(
        [c.model_dump() for c in out["invalid"].content]
    )
    found = _payload(out["search"])
    assert found["results"][0]["id"] == first and found["advisory"].startswith("Memory informs")
    assert all("advisory" not in r for r in found["results"])  # the banner once per result set
    assert out["bad_search"].is_error
    got = _payload(out["get"])
    assert got["memory"]["id"] == second and got["advisory"]
    assert not out["forget"].is_error
    assert first not in [r["id"] for r in _payload(out["after"])["results"]]
    gone = out["get_forgotten"]
    assert gone.is_error and "404" in gone.content[0].text  # the point read: a forgotten id is not found
    assert _payload(out["verify"])["status"] == "ok"
