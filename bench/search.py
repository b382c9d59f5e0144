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

import json
import math
import statistics
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
    rows += quality_rows("cranfield", json.loads(CRANFIELD.read_text()))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
