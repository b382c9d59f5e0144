"""Search: quality on test collections next to bm25s in the same process, and speed at 100,000 records.

Quality: Cranfield (``../shared/corpora/ir-cranfield.json``) and a collection built here from the
Python standard library's documentation (``bench/search_stdlib.py``: queries and judgements written
before the search was run on them), each loaded as memory records of one package; nDCG@10 (gain =
grade) and recall@100 of the service's search (``acx.core.search``) and of ``bm25s`` with its
defaults on the same documents.

Speed: a 100,000-record package built as the service builds it (one segment per ingest batch, then
compacted), serialised, loaded back as the api function does on a cold start, then queried.
"""

from __future__ import annotations

import gc
import json
import math
import random
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CRANFIELD = ROOT.parent / "shared" / "corpora" / "ir-cranfield.json"


def ndcg_at(ranked: list[str], qrels: dict[str, int], k: int = 10) -> float:
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(qrels.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], qrels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def evaluate(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    judged = [q for q in qrels if qrels[q]]
    ndcg = statistics.fmean(ndcg_at(runs.get(q, []), qrels[q]) for q in judged)
    recall = statistics.fmean(recall_at(runs.get(q, []), qrels[q]) for q in judged)
    return ndcg, recall


def as_records(docs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Collection documents as memory records of one package (title + summary, the record text)."""
    return [
        {
            "id": f"doc-{d['id']}",
            "title": d.get("title") or "",
            "summary": d["text"],
            "sourceType": "memory",
            "portable": True,
            "codebaseFingerprint": None,
            "repoId": None,
            "repoLabel": "portable-core",
            "projectLabel": "portable-core",
            "timestamp": "2026-01-01T00:00:00Z",
            "impact": "neutral",
            "xpAwarded": 0,
            "tags": [],
        }
        for d in docs
    ]


def service_runs(
    collection: dict[str, Any], *, lexical_only: bool = False, vector_only: bool = False
) -> dict[str, list[str]]:
    from acx.core.embedding import LocalHash128
    from acx.core.search import search, to_docs
    from acx.core.search.ranking import IndexView
    from acx.core.search.segment import Segment

    engine = LocalHash128()
    docs = to_docs(as_records(collection["docs"]), engine)
    view = IndexView(engine.id, engine.dim, [Segment.build(engine.id, engine.dim, docs)])
    runs = {}
    for q in collection["queries"]:
        if lexical_only or vector_only:
            from acx.core.search.text import tokenize

            terms = [] if vector_only else tokenize(q["text"])
            vector = None if lexical_only else engine.embed([q["text"]])[0]
            hits = view.search(terms, vector, engine.id, k=100)
        else:
            hits = search(view, engine, q["text"], k=100)
        runs[str(q["id"])] = [h.id.removeprefix("doc-") for h in hits]
    return runs


def bm25s_runs(collection: dict[str, Any]) -> dict[str, list[str]]:
    import bm25s

    corpus = [f"{d.get('title') or ''}\n\n{d['text']}" for d in collection["docs"]]
    ids = [str(d["id"]) for d in collection["docs"]]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, show_progress=False), show_progress=False)
    queries = [q["text"] for q in collection["queries"]]
    results, _ = retriever.retrieve(
        bm25s.tokenize(queries, show_progress=False), k=min(100, len(ids)), show_progress=False
    )
    return {
        str(q["id"]): [ids[i] for i in row] for q, row in zip(collection["queries"], results, strict=True)
    }


def quality_rows(name: str, collection: dict[str, Any]) -> list[dict[str, Any]]:
    qrels = {str(q): {str(d): int(g) for d, g in rel.items()} for q, rel in collection["qrels"].items()}
    base_ndcg, base_recall = evaluate(bm25s_runs(collection), qrels)
    ndcg, recall = evaluate(service_runs(collection), qrels)
    lex_ndcg, _ = evaluate(service_runs(collection, lexical_only=True), qrels)
    vec_ndcg, _ = evaluate(service_runs(collection, vector_only=True), qrels)
    return [
        {
            "name": f"search nDCG@10 ({name}, hybrid)",
            "value": round(ndcg, 4),
            "unit": "",
            "baseline": f"bm25s defaults {base_ndcg:.4f}",
            "ratio": ndcg / base_ndcg,
            "target": ">= bm25s",
        },
        {
            "name": f"search recall@100 ({name}, hybrid)",
            "value": round(recall, 4),
            "unit": "",
            "baseline": f"bm25s defaults {base_recall:.4f}",
            "ratio": recall / base_recall,
        },
        {
            "name": f"search nDCG@10 ({name}, lexical signal alone)",
            "value": round(lex_ndcg, 4),
            "unit": "",
        },
        {
            "name": f"search nDCG@10 ({name}, local-hash-128 vector signal alone)",
            "value": round(vec_ndcg, 4),
            "unit": "",
        },
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cranfield = json.loads(CRANFIELD.read_text())
    rows += quality_rows("cranfield", cranfield)
    rows += speed_rows(cranfield, 10_000 if quick else 100_000, 2000)
    return rows




def scale_records(collection: dict[str, Any], n: int, seed: int = 5) -> list[dict[str, Any]]:
    """``n`` distinct memory records made of real text: each is two halves of two random collection
    documents (so term frequencies and co-occurrences stay those of real abstracts)."""
    rng = random.Random(seed)
    words = [f"{d.get('title') or ''} {d['text']}".split() for d in collection["docs"]]
    base = as_records(collection["docs"][:1])[0]
    out = []
    for i in range(n):
        a, b = rng.choice(words), rng.choice(words)
        text = a[: len(a) // 2] + b[len(b) // 2 :]
        out.append(base | {"id": f"mem-{i:06d}", "title": " ".join(text[:8]), "summary": " ".join(text[8:])})
    return out


def speed_rows(collection: dict[str, Any], n: int, batch: int) -> list[dict[str, Any]]:
    from acx.core.embedding import LocalHash128
    from acx.core.search import search, to_docs
    from acx.core.search.ranking import IndexView
    from acx.core.search.segment import Segment, merge

    engine = LocalHash128()
    records = scale_records(collection, n)
    gc.collect()
    started = time.perf_counter()
    segments = []
    for i in range(0, n, batch):  # what ingest does per committed batch: docs, segment, bytes
        seg = Segment.build(engine.id, engine.dim, to_docs(records[i : i + batch], engine))
        seg.to_bytes()
        segments.append(seg)
    index_us = (time.perf_counter() - started) / n * 1e6
    started = time.perf_counter()
    compacted = merge(segments, engine.id, engine.dim, lambda seg, i: True)
    data = compacted.to_bytes()
    compact_s = time.perf_counter() - started
    del segments
    gc.collect()
    queries = [q["text"] for q in collection["queries"]]
    started = time.perf_counter()
    view = IndexView(engine.id, engine.dim, [Segment.from_bytes(data)])
    search(view, engine, queries[0], k=10)
    cold_s = time.perf_counter() - started
    latencies = []
    for q in queries[1:]:
        t0 = time.perf_counter()
        search(view, engine, q, k=10)
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[int(len(latencies) * 0.95)]
    label = f"{n // 1000}k records"
    return [
        {"name": f"search query p95 warm ({label})", "value": round(p95, 2), "unit": "ms", "target": "<= 50 ms"},
        {"name": f"search query p50 warm ({label})", "value": round(p50, 2), "unit": "ms"},
        {
            "name": f"search first query after a cold load ({label}: parse segment + query)",
            "value": round(cold_s, 3),
            "unit": "s",
            "target": "<= 1 s",
        },
        {"name": f"search index bytes per record ({label})", "value": round(len(data) / n, 1), "unit": "B"},
        {
            "name": f"search indexing at ingest ({batch}-record batches)",
            "value": round(index_us, 1),
            "unit": "µs/record",
        },
        {"name": f"search compaction of {len(range(0, n, batch))} segments", "value": round(compact_s, 2), "unit": "s"},
    ]


if __name__ == "__main__":
    import sys

    for row in run(quick="--quick" in sys.argv):
        print(row)
