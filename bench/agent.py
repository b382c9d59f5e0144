"""What an agent spends through MCP: calls and bytes per remembered memory, and bytes of a search.

An ephemeral local stack and the MCP server of ``acx mcp`` (in process, the SDK's own client). The
agent stores ten lessons the way the tool schemas allow: one sentence, one repo-bound lesson, a list
of eight in one call. Bytes are the JSON of the arguments sent plus the text of the answers (what
enters an LLM's context). The search rows put the current compact answer beside the answer the
previous tool shaped from the same API response (full record, signals and the banner per result),
so the comparison is over the same memories. Issue 28's figures for the previous tools: 12 calls to
store one sentence, 12.4 KB for a search at k=10.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

LESSONS = [
    "Deploy the api after the migrations, never before them.",
    "A deploy on Friday needs a second reviewer on call.",
    "Roll back a deploy with the previous image tag, not a revert commit.",
    "The deploy pipeline caches wheels; clear it when constraints change.",
    "Canary deploys take ten minutes to show error-rate changes.",
    "Deploy freezes start at the audit window and end with the sign-off.",
    "Blue-green deploys need the health check path to answer within two seconds.",
    "A failed deploy leaves the lock row; release it with the admin command.",
]
SENTENCE = "Deploy scripts read the region from the profile, not from the environment."
REPO_LESSON = "In this repo a deploy needs the docker socket mounted for the integration tests."
NOTHING = "zebra herds crossing the savannah"


def _previous_search_answer(api_answer: dict[str, Any]) -> dict[str, Any]:
    """The answer the previous `search` tool built: the banner, then per result the banner again,
    the score, the signals and the whole record."""
    banner = api_answer.get("advisory")
    return {
        "advisory": banner,
        "results": [
            {
                "advisory": banner,
                "score": r.get("score"),
                "signals": r.get("signals"),
                "memory": r.get("record"),
            }
            for r in api_answer.get("results") or []
        ],
    }


async def _session(endpoint: str, token: str) -> dict[str, Any]:
    from mcp.client import Client

    from acx.cli.mcp_server import build_server
    from acx.client.memory import Memory

    memory = Memory("bench-agent", endpoint=endpoint, token=token)
    figures: dict[str, Any] = {}
    async with Client(build_server(memory)) as client:
        calls = sent = received = 0

        async def call(name: str, args: dict[str, Any]) -> tuple[Any, int]:
            nonlocal calls, sent, received
            result = await client.call_tool(name, args)
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content}")
            text = "".join(getattr(c, "text", "") for c in result.content)
            calls += 1
            sent += len(json.dumps(args).encode())
            received += len(text.encode())
            return result.structured_content, len(text.encode())

        await call("remember", {"text": SENTENCE})
        await call("remember", {"text": REPO_LESSON, "repo": "https://github.com/acme/bench-api.git"})
        await call("remember", {"texts": LESSONS})
        stored = 2 + len(LESSONS)
        figures["calls_per_memory"] = calls / stored
        figures["bytes_per_memory"] = (sent + received) / stored
        figures["sentence_calls"] = 1
        for k in (5, 10):
            _, size = await call("search", {"query": "deploy", "k": k})
            raw = memory.api.call("GET", f"/v1/packages/bench-agent/memories/search?q=deploy&k={k}")[1]
            figures[f"search_k{k}_bytes"] = size
            figures[f"search_k{k}_previous_bytes"] = len(
                json.dumps(_previous_search_answer(raw), indent=2).encode()
            )
            figures[f"search_k{k}_results"] = len(raw.get("results") or [])
        answer, _ = await call("search", {"query": NOTHING})
        raw = memory.api.call(
            "GET", "/v1/packages/bench-agent/memories/search", query={"q": NOTHING, "k": 10}
        )[1]
        figures["nothing_results"] = len(answer["results"])
        figures["nothing_previous_results"] = len(raw.get("results") or [])
    return figures


def run(quick: bool) -> list[dict[str, Any]]:
    import os
    import tempfile

    from acx.local.stack import LocalStack

    # the repo-bound lesson needs an installation salt: a throwaway one, never the user's
    with tempfile.TemporaryDirectory(prefix="acx-bench-agent-") as tmp:
        previous = os.environ.get("ACX_SALT_FILE")
        os.environ["ACX_SALT_FILE"] = os.path.join(tmp, "salt")
        try:
            with LocalStack(port=0, quiet=True, verify_interval=None) as stack:
                f = anyio.run(_session, stack.endpoint, stack.token("bench-agent"))
        finally:
            if previous is None:
                os.environ.pop("ACX_SALT_FILE", None)
            else:
                os.environ["ACX_SALT_FILE"] = previous
    note = "MCP, in process; bytes = argument JSON + answer text"
    return [
        {
            "name": "MCP calls to store one sentence",
            "value": f["sentence_calls"],
            "unit": "calls",
            "baseline": 12,
            "note": "previous tools: 12 (issue 28)",
        },
        {
            "name": "MCP calls per remembered memory (1 + 1 repo-bound + a list of 8)",
            "value": round(f["calls_per_memory"], 2),
            "unit": "calls",
            "note": note,
        },
        {
            "name": "MCP bytes per remembered memory",
            "value": round(f["bytes_per_memory"]),
            "unit": "B",
            "note": note,
        },
        {
            "name": "MCP search answer, k=5",
            "value": f["search_k5_bytes"],
            "unit": "B",
            "baseline": f["search_k5_previous_bytes"],
            "note": f"{f['search_k5_results']} results; baseline: the previous tool's shape of this answer",
        },
        {
            "name": "MCP search answer, k=10",
            "value": f["search_k10_bytes"],
            "unit": "B",
            "baseline": f["search_k10_previous_bytes"],
            "note": f"{f['search_k10_results']} results; issue 28 measured 12.4 KB on its data",
        },
        {
            "name": "MCP search with nothing relevant: results",
            "value": f["nothing_results"],
            "unit": "",
            "baseline": f["nothing_previous_results"],
            "note": "baseline: unrelated vector-only hits the API returns",
        },
    ]


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
