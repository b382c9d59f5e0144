"""Forget benchmarks (issue 11): what the tombstone check costs an upload, and how often the near-copy
rule is wrong.

- ingest of a 100-record bundle into a package with 10,000 tombstones vs a package with none
  (in-process moto, interleaved, median CPU time of the process; wall time and load average beside):
  exact keys are looked up by key and near copies by band key, so the ratio should stay near 1
  whatever the number of tombstones (target <= 1.1);
- the near-copy check per record (keyed knowledge key + id key + word-pair sketch + band keys +
  candidate match against the 10,000 tombstones' bands, held in a dict: the store's reads excluded)
  next to the ingest core's per-record cost (bench/core.py's ``_core_once``: parse .. merge_into),
  both CPU time over the same records in the same run; and the tombstone check as ingest runs it
  (store reads through moto included) per record;
- false refusals among 100,000 unrelated generated records against 10,000 tombstones (the rule's
  cost of being wrong), and the share of one-word edits and appended sentences it catches;
- the same on real text found on this machine, not in the repo: docstrings of the running Python's
  standard library (tombstones from half of its modules, unrelated records from the other half),
  and real edits: the same function's docstring in another installed Python version where it differs.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import random
import statistics
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

VOCAB = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi") for b in "bdfgklmnprstvz"]
TARGET_RATIO = 1.1


def _words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(VOCAB) for _ in range(n))


def _memory(i: int, rnd: random.Random, prefix: str = "rec") -> dict[str, Any]:
    from bench.common import portable_record

    title = f"lesson {_words(rnd, 5)}"
    return portable_record(f"{prefix}-{i:06d}", title, _words(rnd, rnd.randint(12, 80)), i % 50, ["bench"])


def _stones(keyer: Any, memories: list[dict[str, Any]]) -> Any:
    from acx.adapters.log_rows import Tombstones
    from acx.core import forgetting as f

    parts = []
    for m in memories:
        kk = f.knowledge_key(keyer, m["title"], m["summary"])
        sk = f.record_sketch(keyer, m["title"], m["summary"])
        parts.append(Tombstones((kk,), (f.id_key(keyer, m["id"]),), (), ((kk, sk),) if sk else ()))
    return Tombstones.union(parts)


def _wire(value: Any) -> Any:
    """boto3's attribute values as DynamoDB's JSON wire has them (binary base64-encoded)."""
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes(v)).decode() if k == "B" else _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _seed_tombstones(deps: Any, ref: Any, memories: list[dict[str, Any]]) -> int:
    """The tombstones of ``memories`` in the real item layout: the items come from the row store's
    own request builder; they are put straight into moto's table (220,000 items through the client
    cost minutes of moto's request parsing that no ingest pays). Returns the item count."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    requests = deps.log.rows.tombstone_requests(ref, _stones(deps.forget_keys, memories), 1)
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for table, request in requests:
        backend.get_table(table).put_item(_wire(request["PutRequest"]["Item"]))
    return len(requests)


def _deps() -> Any:
    import boto3

    from acx.adapters.log_store import LogStore
    from acx.adapters.objects import ObjectStore
    from acx.config import Settings
    from acx.core.checkpoint import NoteSigner
    from acx.core.signing import LocalEd25519Signer
    from acx.local.resources import create_tables_named
    from acx.usecases.deps import DEV_FORGET_KEY, Deps

    settings = Settings.model_validate({})
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    create_tables_named(
        ddb,
        {
            "RECORDS_TABLE": settings.records_table,
            "RECEIPTS_TABLE": settings.receipts_table,
            "HEADS_TABLE": settings.heads_table,
        },
    )
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=settings.data_bucket)
    notes = NoteSigner("acx-bench", LocalEd25519Signer())
    data = ObjectStore(s3, settings.data_bucket)
    log = LogStore(ddb, settings, notes.sign, notes.verifier_key)
    return Deps(settings, log, data, data, data, None, None, DEV_FORGET_KEY)  # type: ignore[arg-type]


def _bundle(rnd: random.Random, start: int) -> bytes:
    records = [_memory(start + i, rnd) for i in range(100)]
    return json.dumps({"schemaVersion": "acx.memory-bundle/1", "records": records}).encode()


def _ingest_timings(n_stones: int, reps: int) -> dict[str, Any]:
    """Median CPU (and wall) seconds of one 100-record ingest per side, and the tombstone check's CPU
    per record as ingest runs it (moto reads included)."""
    from moto import mock_aws

    from acx.core.package import PackageRef
    from acx.usecases.ingest import ingest_bundle

    rnd = random.Random(3)
    with mock_aws():
        deps = _deps()
        items = _seed_tombstones(
            deps, PackageRef("t", "stones"), [_memory(i, rnd, "gone") for i in range(n_stones)]
        )
        rows = deps.log.rows
        check = {"none": 0.0, "stones": 0.0}
        current = ["none"]
        inner = rows.tombstone_hits

        def timed_hits(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                check[current[0]] += time.process_time() - started

        rows.tombstone_hits = timed_hits  # type: ignore[method-assign]
        ingest_bundle(deps, "t", "warm", "bench", _bundle(rnd, 900_000))
        cpu: dict[str, list[float]] = {"none": [], "stones": []}
        wall: dict[str, list[float]] = {"none": [], "stones": []}
        for rep in range(reps):  # interleaved: the machine is shared and moto's tables grow
            for pkg in ("none", "stones") if rep % 2 == 0 else ("stones", "none"):
                body = _bundle(rnd, 100_000 * (rep + 1) + (0 if pkg == "none" else 50_000))
                current[0] = pkg
                c0, w0 = time.process_time(), time.perf_counter()
                summary = ingest_bundle(deps, "t", pkg, "bench", body)
                cpu[pkg].append(time.process_time() - c0)
                wall[pkg].append(time.perf_counter() - w0)
                assert summary.accepted == 100 and summary.refused == 0, summary
    return {
        "cpu": {k: statistics.median(v) for k, v in cpu.items()},
        "wall": {k: statistics.median(v) for k, v in wall.items()},
        "check_us": {k: v / (reps * 100) * 1e6 for k, v in check.items()},
        "items": items,
    }


def _per_record_costs(n: int, n_stones: int) -> tuple[float, float]:
    """(near-copy check, ingest core) in CPU us per record, best of 3, over the same records."""
    from acx.core import forgetting as f
    from acx.usecases.deps import DEV_FORGET_KEY
    from bench.common import generate_records
    from bench.core import _core_once, _make_store

    records = generate_records(n, seed=1)
    data = json.dumps(records, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    by_id, by_slot = _make_store(records, n // 2)
    near = f.NearPolicy()
    index = _band_index(DEV_FORGET_KEY, [_memory(i, random.Random(i), "gone") for i in range(n_stones)])
    check = core = float("inf")
    for _ in range(3):
        started = time.process_time()
        probes = f.probes(DEV_FORGET_KEY, records, near)
        candidates = {bk: index[bk] for p in probes for bk in p.bands if bk in index}
        hits = f.near_hits(candidates, probes, near.threshold)
        check = min(check, time.process_time() - started)
        started = time.process_time()
        _core_once(data, by_id, by_slot)
        core = min(core, time.process_time() - started)
        assert hits == [], hits
    return check / n * 1e6, core / n * 1e6


Index = dict[str, dict[str, tuple[tuple[int, ...], int]]]


def _band_index(keyer: Any, stones: list[dict[str, Any]]) -> Index:
    """band key -> tombstone -> (sketch, seq): what the band items hold, in a dict."""
    from acx.core import forgetting as f

    index: Index = {}
    for i, m in enumerate(stones):
        sk = f.record_sketch(keyer, m["title"], m["summary"])
        if sk is not None:
            for bk in f.band_keys(sk):
                index.setdefault(bk, {})[str(i)] = (sk, i)
    return index


def _error_rates(n_stones: int, n_unrelated: int) -> tuple[int, float, float]:
    """(false refusals, share of one-word edits caught, share of appended sentences caught)."""
    from acx.core import forgetting as f
    from acx.usecases.deps import DEV_FORGET_KEY

    rnd = random.Random(9)
    keyer, near = DEV_FORGET_KEY, f.NearPolicy()
    stones = [_memory(i, rnd, "gone") for i in range(n_stones)]
    index = _band_index(keyer, stones)
    false = 0
    for start in range(
        0, n_unrelated, 10_000
    ):  # probes built in slices: 100k sketches held at once is 0.5 GB
        batch = (_memory(i, rnd, "new") for i in range(start, min(n_unrelated, start + 10_000)))
        false += len(f.near_hits(index, f.probes(keyer, batch, near), near.threshold))
    edits, appended = [], []
    for m in stones:
        words = m["summary"].split()
        words[rnd.randrange(len(words))] = "zebra"
        edits.append({**m, "summary": " ".join(words)})
        appended.append({**m, "summary": m["summary"] + " Then page the owner and write it down."})
    caught_edit = len(f.near_hits(index, f.probes(keyer, edits, near), near.threshold)) / n_stones
    caught_app = len(f.near_hits(index, f.probes(keyer, appended, near), near.threshold)) / n_stones
    return false, caught_edit, caught_app


# ---------------------------------------------------------------------------------------- real text


def _docstrings(root: Path) -> Iterator[tuple[str, str, str]]:
    """(module path, qualified name, docstring) of every module, class and function under ``root``
    (parsed with ast, nothing imported); tests and vendored packages left out."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(part in rel for part in ("test", "site-packages", "idlelib", "lib2to3", "__phello__")):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            doc = ast.get_docstring(node, clean=True) if isinstance(node, _DOC_NODES) else None
            if doc:
                yield rel, prefix or "<module>", doc
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    stack.append((child, f"{prefix}.{child.name}" if prefix else child.name))


_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _as_memory(doc: str) -> tuple[str, str]:
    """A docstring as a memory: its first line the title, the rest of its first 120 words the summary."""
    first, _, rest = doc.strip().partition("\n")
    return first.strip(), " ".join(rest.split()[:120])


def _other_stdlib() -> Path | None:
    """Another installed Python's standard library (pyenv or the system's), for real edits."""
    here = Path(sysconfig.get_paths()["stdlib"]).resolve()
    found = sorted(Path.home().glob(".pyenv/versions/3.*/lib/python3.*")) + sorted(
        Path("/usr/lib").glob("python3.*")
    )
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for path in found:
        if path.resolve() != here and (path / "os.py").exists() and not path.name.endswith(mine):
            return path
    return None


def _jaccard(a: str, b: str) -> float:
    from acx.core import forgetting as f

    x, y = set(f.shingles(a)), set(f.shingles(b))
    return len(x & y) / len(x | y) if x | y else 1.0


def _real_text(n_stones: int) -> dict[str, Any] | None:
    """Refusals and catches on the standard library's docstrings (None when it cannot be read)."""
    from acx.core import forgetting as f
    from acx.usecases.deps import DEV_FORGET_KEY as keyer

    root = Path(sysconfig.get_paths()["stdlib"])
    if not (root / "os.py").exists():
        return None
    near = f.NearPolicy()
    seen: set[str] = set()
    halves: dict[int, list[tuple[str, str, str, str]]] = {0: [], 1: []}
    for rel, qual, doc in _docstrings(root):
        title, summary = _as_memory(doc)
        text = f.knowledge_text(title, summary)
        if text in seen:
            continue  # the same text twice is the same knowledge (an exact copy), not an unrelated record
        seen.add(text)
        half = hashlib.sha256(rel.encode()).digest()[0] & 1  # whole modules on one side
        halves[half].append((rel, qual, title, summary))
    stones, unrelated = halves[0][:n_stones], halves[1]
    texts = {f.knowledge_text(t, s) for _, _, t, s in stones}
    unrelated = [u for u in unrelated if f.knowledge_text(u[2], u[3]) not in texts]
    index: Index = {}
    by_id = {}
    for i, (_, _, t, s) in enumerate(stones):
        sk = f.record_sketch(keyer, t, s)
        by_id[i] = f.knowledge_text(t, s)
        if sk is not None:
            for bk in f.band_keys(sk):
                index.setdefault(bk, {})[str(i)] = (sk, i)
    probes = f.probes(
        keyer, ({"id": str(i), "title": u[2], "summary": u[3]} for i, u in enumerate(unrelated)), near
    )
    refused = f.near_hits(index, probes, near.threshold)
    refused_j = [
        _jaccard(f.knowledge_text(unrelated[h.index][2], unrelated[h.index][3]), by_id[h.seq])
        for h in refused
    ]
    out: dict[str, Any] = {
        "stones": len(stones),
        "sketched": sum(1 for _, _, t, s in stones if f.record_sketch(keyer, t, s) is not None),
        "unrelated": len(unrelated),
        "refused": len(refused),
        "refused_below_threshold": sum(1 for j in refused_j if j < near.threshold),
        "examples": [
            (unrelated[h.index][1], stones[h.seq][1], round(j, 2))
            for h, j in zip(refused[:5], refused_j, strict=False)
        ],
    }
    other = _other_stdlib()
    if other is None:
        return out
    mine = {(rel, qual): i for i, (rel, qual, _, _) in enumerate(stones)}
    edits: list[tuple[int, str, str, float]] = []
    for rel, qual, doc in _docstrings(other):
        i = mine.get((rel, qual))
        if i is None:
            continue
        title, summary = _as_memory(doc)
        text = f.knowledge_text(title, summary)
        if text != by_id[i] and f.record_sketch(keyer, title, summary) is not None:
            edits.append((i, title, summary, _jaccard(text, by_id[i])))
    hits = f.near_hits(
        index,
        f.probes(keyer, ({"id": str(i), "title": t, "summary": s} for i, t, s, _ in edits), near),
        near.threshold,
    )
    caught = {h.index for h in hits}
    light = [k for k, e in enumerate(edits) if e[3] >= near.threshold]
    out.update(
        other=str(other),
        edits=len(edits),
        edits_caught=len(caught),
        light_edits=len(light),
        light_caught=sum(1 for k in light if k in caught),
        heavy_caught=sum(1 for k in range(len(edits)) if k not in light and k in caught),
    )
    return out


def run(quick: bool) -> list[dict[str, Any]]:
    n_stones = 1_000 if quick else 10_000
    load = os.getloadavg()[0]
    timing = _ingest_timings(n_stones, 3 if quick else 7)
    check_us, core_us = _per_record_costs(2_000 if quick else 10_000, n_stones)
    n_err_stones, n_unrelated = (2_000, 20_000) if quick else (10_000, 100_000)
    false, edit, app = _error_rates(n_err_stones, n_unrelated)
    real = _real_text(n_stones)
    cpu, wall = timing["cpu"], timing["wall"]
    ratio = cpu["stones"] / cpu["none"]
    rows: list[dict[str, Any]] = [
        {
            "name": f"ingest 100 records, package with {n_stones:,} tombstones "
            f"({timing['items']:,} items), CPU",
            "value": round(cpu["stones"] * 1000, 1),
            "unit": "ms",
            "baseline": round(cpu["none"] * 1000, 1),
            "ratio": ratio,
            "target": f"ratio <= {TARGET_RATIO} (baseline: no tombstones)"
            + ("" if ratio <= TARGET_RATIO else " MISSED"),
            "note": f"median CPU of {3 if quick else 7} interleaved runs; wall "
            f"{wall['stones'] * 1000:.0f} vs {wall['none'] * 1000:.0f} ms at load {load:.1f}",
        },
        {
            "name": "near-copy check per record (keys + sketch + band match vs the tombstones), CPU",
            "value": round(check_us, 1),
            "unit": "us",
            "baseline": round(core_us, 1),
            "ratio": check_us / core_us,
            "target": "baseline: ingest core per record (bench core _core_once, same records, same run)",
        },
        {
            "name": "tombstone check in ingest per record (moto BatchGetItem included), CPU",
            "value": round(timing["check_us"]["stones"], 1),
            "unit": "us",
            "baseline": round(timing["check_us"]["none"], 1),
            "ratio": timing["check_us"]["stones"] / timing["check_us"]["none"],
            "target": f"baseline: the same check in a package with no tombstones (vs {n_stones:,})",
        },
        {
            "name": f"near-copy false refusals ({n_unrelated:,} unrelated vs {n_err_stones:,} tombstones)",
            "value": false,
            "unit": "records",
            "baseline": None,
            "ratio": None,
            "target": "0" + ("" if false == 0 else " MISSED"),
        },
        {
            "name": f"near copies caught: one word changed (of {n_err_stones:,})",
            "value": round(edit * 100, 2),
            "unit": "%",
            "baseline": None,
            "ratio": None,
            "target": "report (threshold 0.5)",
        },
        {
            "name": f"near copies caught: a sentence appended (of {n_err_stones:,})",
            "value": round(app * 100, 2),
            "unit": "%",
            "baseline": None,
            "ratio": None,
            "target": "report (threshold 0.5)",
        },
    ]
    if real is not None:
        rows.append(
            {
                "name": f"real text: stdlib docstrings refused ({real['unrelated']:,} unrelated vs "
                f"{real['stones']:,} tombstones, {real['sketched']:,} sketched)",
                "value": real["refused"],
                "unit": "records",
                "baseline": None,
                "ratio": None,
                "target": f"report; {real['refused_below_threshold']} below the threshold by true word-pair "
                f"Jaccard; first: {real['examples']}",
            }
        )
        if "edits" in real:
            rows.append(
                {
                    "name": f"real edits caught: same docstring in {real['other']} "
                    f"({real['edits']:,} differ)",
                    "value": round(100 * real["light_caught"] / max(1, real["light_edits"]), 1),
                    "unit": "%",
                    "baseline": None,
                    "ratio": None,
                    "target": f"report: of {real['light_edits']} edits at true Jaccard >= 0.5; all edits "
                    f"{real['edits_caught']}/{real['edits']}, heavier ones caught {real['heavy_caught']}",
                }
            )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
