"""How often a write request reads its package's head item: once before the writer's lease (lock,
forget flag and row shard count, decided on by the use case), once under it (the commit's own read,
the concurrency protocol of acx.adapters.log_commit)."""

from __future__ import annotations

from typing import Any

from acx.config import Settings
from acx.core.signing import LocalEd25519Signer
from tests.factories import memory
from tests.fakes import FakeIndex, fake_deps, ingest_records
from tests.integration.conftest import REF, log_store  # type: ignore[import-not-found]


def count_head_reads(client: Any, settings: Settings) -> list[str]:
    """The GetItem calls on the head item from now on, each named by its projection."""
    reads: list[str] = []

    def seen(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == settings.heads_table and params["Key"]["sk"]["S"] == "head":
            reads.append(params.get("ProjectionExpression", "item"))

    client.meta.events.register("provide-client-params.dynamodb.GetItem", seen)
    return reads


def test_an_ingest_into_an_existing_package_reads_its_head_once_before_the_lease(
    ddb: Any, settings: Settings, signer: LocalEd25519Signer
) -> None:
    deps = fake_deps()
    deps.index_hooks = FakeIndex()
    deps.log = log_store(ddb, settings, signer)
    ingest_records(deps, REF, memory("m-1", title="first lesson"))
    deps.log = log_store(ddb, settings, signer)  # a cold process: no row shard count cached
    reads = count_head_reads(ddb, settings)
    summary = ingest_records(deps, REF, memory("m-2", title="second lesson"))
    assert summary.accepted == 1 and (summary.from_seq, summary.to_seq) == (1, 1)
    assert reads == ["item", "item"]  # the request's read, then the commit's under the lease
