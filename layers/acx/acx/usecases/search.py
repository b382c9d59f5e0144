"""Search a package's memories; keep its index (segments in S3) in step with ingest and forget.

- ``search``: validate, load the index (cached across warm invocations, revalidated by the manifest
  ETag), rank (``acx.core.search``), then re-read the hits' rows from the log: a result is always
  the current active record, never a forgotten or stale one, whatever state the index is in.
- ``SearchIndexer.indexed``: one segment per ingest batch (O(batch)), added to the manifest with a
  conditional write. ``SearchIndexer.forgotten``: rewrites every segment holding the memory (and
  the ids folded into it) without it and purges the old objects, before the forget answers.
- ``compact``: merges a package's segments into one (background: the scheduled run).

What it does NOT stop: a query is the caller's own text; it is never logged or stored, but it does
go to the configured embedding engine (Bedrock, when so configured).

One module: the read path (query, cache, load, search) and the write path
(``SearchIndexer``: ingest, forget, compaction) share one manifest protocol over the index store;
split, each half would re-state its conditional-write rules.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from acx.contract.search import (
    MAX_QUERY_CHARS,
    LexicalSignal,
    SearchResponse,
    SearchResult,
    Signal,
    Signals,
)
from acx.core.package import PackageRef
from acx.usecases.errors import ServiceError, not_found

if TYPE_CHECKING:
    from acx.adapters.search_index import Manifest
    from acx.core.embedding import EmbeddingEngine
    from acx.core.search.ranking import Hit, IndexView
    from acx.core.search.segment import Packed, Segment
    from acx.usecases.deps import Deps
    from acx.usecases.ports import SearchIndexPort

MAX_K = 50
DEFAULT_K = 10
MAX_TAG_CHARS = 128
COMPACT_AT = 8  # segments: the scheduled run compacts a package's index beyond this
COMPACT_NOW_AT = 64  # segments: an ingest compacts inline beyond this (the schedule fell behind)
# Docs per segment an ingest writes: a batch's index is built this many records at a time, so the hook
# holds one slice's tokens and vectors, not the whole upload's (a 100k-record upload built as one
# segment took ingest's peak RSS from ~750 MiB to 1,413 MiB). The slices are listed in one manifest
# update (all or none) and the scheduled compaction joins them.
SEGMENT_DOCS = 10_000
CACHE_DOCS = 400_000  # docs kept in the warm function's memory (~1 KB each), across packages (LRU)
REBUILD_PAGE = 1000
MAX_RETRIES = 8
# A warm api function revalidates a cached index against its manifest at most this often (one S3
# GET, 304 when unchanged). Like a search engine's refresh interval: a memory ingested through another
# instance shows in this one's results up to this late; changes made in this process expire the
# cache at once. It never lets a forgotten memory through: every hit is re-read from the log.
REVALIDATE_SECONDS = 1.0


class SearchQuery(BaseModel):
    """A validated search request (``GET /v1/packages/{pkg}/memories/search``)."""

    q: str
    k: int = DEFAULT_K
    tier: str | None = None
    tag: str | None = None
    trust: str = "belief"  # belief | candidate | any (acx.core.review)
    agent: str | None = None  # only memories this agent wrote


def parse_query(
    q: str | None,
    k: str | int | None = None,
    tier: str | None = None,
    tag: str | None = None,
    trust: str | None = None,
    agent: str | None = None,
) -> SearchQuery:
    """400 naming the parameter and the limit for anything a search cannot run on.

    Messages never repeat the query: it may hold a secret.
    """
    if q is None or not q.strip():
        raise ServiceError(400, "invalid_query", "q is required and must not be blank", "$.q")
    if len(q) > MAX_QUERY_CHARS:
        raise ServiceError(400, "invalid_query", f"q is limited to {MAX_QUERY_CHARS} characters", "$.q")
    if any((ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in q):
        raise ServiceError(
            400, "invalid_query", "q must be text: control characters and binary are refused", "$.q"
        )
    if k is None or k == "":
        k_value = DEFAULT_K
    else:
        try:
            k_value = int(k)
        except (TypeError, ValueError):
            k_value = 0
        if isinstance(k, bool) or not 1 <= k_value <= MAX_K:
            raise ServiceError(400, "invalid_query", f"k must be an integer from 1 to {MAX_K}", "$.k")
    if tier not in (None, "rom", "save"):
        raise ServiceError(400, "invalid_query", "tier must be rom or save", "$.tier")
    if tag is not None and not 1 <= len(tag) <= MAX_TAG_CHARS:
        raise ServiceError(400, "invalid_query", f"tag must be 1 to {MAX_TAG_CHARS} characters", "$.tag")
    from acx.usecases.review import check_agent, check_trust

    return SearchQuery(q=q, k=k_value, tier=tier, tag=tag, trust=check_trust(trust), agent=check_agent(agent))


# ---- engines ---------------------------------------------------------------------------------


_ENGINES: dict[tuple[str, int], EmbeddingEngine] = {}


def engine_for(deps: Deps) -> EmbeddingEngine:
    """The configured engine: ``local-hash-128`` (default), ``minilm-l6-v2-int8-384`` (offline, the
    ``semantic`` extra) or ``bedrock:<model id>`` (Titan V2, Cohere Embed v3)."""
    cfg = deps.settings
    name, dim = cfg.search_engine, cfg.search_embed_dim
    engine = _ENGINES.get((name, dim))
    if engine is None:
        from acx.core.embedding import engine_named

        engine = engine_named(name)
        if engine is None and name.startswith("bedrock:"):
            from acx.adapters.bedrock import engine_for_model, runtime_client

            engine = engine_for_model(runtime_client(), name.removeprefix("bedrock:"), dim)
        if engine is None:
            raise ServiceError(500, "misconfigured", "SEARCH_ENGINE names no known embedding engine")
        _ENGINES[(name, dim)] = engine
    return engine


# ---- the warm cache --------------------------------------------------------------------------


@dataclass
class _Cached:
    etag: str | None
    view: IndexView
    checked: float = 0.0  # time.monotonic() of the last revalidation against the manifest


class IndexCache:
    """Per process: each package's view (by manifest ETag) and its immutable segments (by key)."""

    def __init__(self, max_docs: int = CACHE_DOCS) -> None:
        self.max_docs = max_docs
        self.views: OrderedDict[tuple[str, str], _Cached] = OrderedDict()
        self.segments: dict[str, Packed] = {}
        self.lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> _Cached | None:
        with self.lock:
            hit = self.views.get(key)
            if hit is not None:
                self.views.move_to_end(key)
            return hit

    def put(self, key: tuple[str, str], cached: _Cached) -> None:
        with self.lock:
            self.views[key] = cached
            self.views.move_to_end(key)
            while len(self.views) > 1 and sum(v.view.n for v in self.views.values()) > self.max_docs:
                self.views.popitem(last=False)
            live = {id(s) for v in self.views.values() for s in v.view.segments}
            self.segments = {k: s for k, s in self.segments.items() if id(s) in live}

    def drop(self, key: tuple[str, str]) -> None:
        with self.lock:
            self.views.pop(key, None)

    def expire(self, key: tuple[str, str]) -> None:
        """Revalidate on the next search (this process changed the manifest; segments stay cached)."""
        with self.lock:
            hit = self.views.get(key)
            if hit is not None:
                hit.checked = -math.inf


CACHE = IndexCache()


def load_view(
    deps: Deps,
    tenant: str,
    package: str,
    engine: EmbeddingEngine,
    exists: Callable[[], bool] | None = None,
) -> IndexView:
    """The package's index: cached while the manifest's ETag holds; rebuilt from the log when it is
    missing, unreadable or built by another engine (an index is never queried with another engine).

    ``exists`` is asked only when there is no manifest (404 if False): an index is only ever written
    for a package that exists, so a found manifest answers that without a read of the log.
    """
    from acx.adapters.search_index import SegmentMissing
    from acx.core.search.ranking import IndexView
    from acx.core.search.segment import Packed, SegmentError

    store = deps.search_index()
    key = (tenant, package)
    cached = CACHE.get(key)
    if cached is not None and (cached.view.engine, cached.view.dim) != (engine.id, engine.dim):
        cached = None  # a view of another engine's vectors is never queried: read the manifest again
    now = time.monotonic()
    if cached is not None and now - cached.checked < REVALIDATE_SECONDS:
        return cached.view
    manifest = store.manifest(tenant, package, if_none_match=cached.etag if cached else None)
    if manifest is store.NOT_MODIFIED and cached is not None:
        cached.checked = now
        return cached.view
    if manifest is None and exists is not None and not exists():
        raise not_found()
    if manifest is None or manifest.engine != engine.id or manifest.dim != engine.dim:
        return rebuild(deps, tenant, package, engine, manifest)
    segments = []
    try:
        for seg_key in manifest.segments:
            seg = CACHE.segments.get(seg_key)
            if seg is None:
                seg = Packed.parse(store.get_segment(seg_key))
                CACHE.segments[seg_key] = seg
            segments.append(seg)
        view = IndexView(manifest.engine, manifest.dim, segments, frozenset(manifest.deleted))
    except (SegmentError, ValueError, KeyError, SegmentMissing):  # damaged, or gone (a forget raced it)
        return rebuild(deps, tenant, package, engine, manifest)
    CACHE.put(key, _Cached(manifest.etag, view, now))
    return view


def rebuild(
    deps: Deps, tenant: str, package: str, engine: EmbeddingEngine, old: Manifest | None
) -> IndexView:
    """Index every active record of the package in one segment and install it (O(package)).

    The manifest is replaced only if it is still ``old``: an ingest that added a segment meanwhile
    wins, and this view is served once without being stored.
    """
    from acx.adapters.search_index import Manifest, ManifestConflict
    from acx.core.search import to_docs
    from acx.core.search.ranking import IndexView
    from acx.core.search.segment import Packed, Segment

    store = deps.search_index()
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        page, cursor = deps.log.list_active(PackageRef(tenant, package), limit=REBUILD_PAGE, cursor=cursor)
        records += [row.record for row in page if row.record is not None]
        if not cursor:
            break
    segment = Packed.parse(Segment.build(engine.id, engine.dim, to_docs(records, engine)).to_bytes())
    view = IndexView(engine.id, engine.dim, [segment])
    seg_key = store.put_segment(tenant, package, segment.data)
    fresh = Manifest(engine.id, engine.dim, [seg_key], [len(segment)], etag=old.etag if old else None)
    try:
        etag = store.put_manifest(tenant, package, fresh)
    except ManifestConflict:
        store.purge(seg_key)
        return view
    if old is not None:
        for stale in old.segments:
            store.purge(stale)
    CACHE.segments[seg_key] = segment
    CACHE.put((tenant, package), _Cached(etag, view, time.monotonic()))
    return view


# ---- the read path ---------------------------------------------------------------------------


def search(deps: Deps, tenant: str, package: str, query: SearchQuery) -> SearchResponse:
    """Top ``k`` active memories for ``query``, each with its score and the signals that matched."""
    from acx.core.review import advisory, author, serves
    from acx.core.search import rank

    ref = PackageRef(tenant, package)
    engine = engine_for(deps)
    view = load_view(deps, tenant, package, engine, exists=lambda: deps.log.package_exists(ref))
    ranking = rank(view, engine, query.q, k=min(query.k * 2 + 10, 200), zone=query.tier, tag=query.tag)
    hits = ranking.hits
    results: list[SearchResult] = []
    at, want = 0, query.k  # the rows of the top k first; more only for hits the log no longer holds
    while len(results) < query.k and at < len(hits):
        batch = hits[at : at + want]
        at += len(batch)
        listed = deps.log.active_listed(ref, {h.id for h in batch})
        for hit in batch:
            row = listed.get(hit.id)
            if row is None:
                continue  # the index lags the log (a forget or merge in flight): the log decides
            if not serves(query.trust, row.trust) or (query.agent is not None and row.agent != query.agent):
                continue  # trust and agent filter the rows the log holds now, not the index
            results.append(_result(hit, row.record, row.trust, author(row.actor, row.agent)))
            if len(results) == query.k:
                break
        want = (query.k - len(results)) * 2 + 10
    from acx.contract import ADVISORY, ADVISORY_CANDIDATES
    from acx.core.search.ranking import NO_MATCH

    reason = None if results else ranking.reason or NO_MATCH  # hits the log no longer holds: none left
    return SearchResponse(
        advisory=advisory(ADVISORY, query.trust, ADVISORY_CANDIDATES),
        engine=engine.id,
        k=query.k,
        results=results,
        reason=reason,
    )


def _result(
    hit: Hit, record: dict[str, Any], trust: str = "belief", by: dict[str, str] | None = None
) -> SearchResult:
    signals = Signals(
        lexical=LexicalSignal(rank=hit.lexical_rank, score=hit.lexical_score, terms=list(hit.terms))
        if hit.lexical_rank is not None and hit.lexical_score is not None
        else None,
        vector=Signal(rank=hit.vector_rank, score=hit.vector_score)
        if hit.vector_rank is not None and hit.vector_score is not None
        else None,
    )
    return SearchResult(id=hit.id, score=hit.score, signals=signals, record=record, trust=trust, author=by)


# ---- the write path: hooks called by ingest and forget -----------------------------------------


class SearchIndexer:
    """The ``IndexHooks`` of ``usecases.deps``: keeps a package's index in step with its log."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def indexed(
        self,
        tenant: str,
        package: str,
        records: list[dict[str, Any]],
        absorbed: dict[str, list[str]],
        *,
        new_package: bool,
    ) -> None:
        """Add a committed batch's segments, one per ``SEGMENT_DOCS`` of its survivors, in one manifest
        update (ids folded into the survivors are hidden)."""
        from acx.adapters.search_index import Manifest, ManifestConflict
        from acx.core.search import to_docs
        from acx.core.search.segment import Segment

        store = self.deps.search_index()
        engine = engine_for(self.deps)
        retired = {rid: survivor for survivor, ids in absorbed.items() for rid in ids}
        added: list[tuple[str, int]] = []  # (segment key, docs), one per slice of the batch
        for start in range(0, len(records), SEGMENT_DOCS):  # a failure: ingest drops the whole index
            part = records[start : start + SEGMENT_DOCS]
            segment = Segment.build(engine.id, engine.dim, to_docs(part, engine)).to_bytes()
            added.append((store.put_segment(tenant, package, segment), len(part)))
        for _ in range(MAX_RETRIES):
            manifest = store.manifest(tenant, package)
            if manifest is None:
                if not new_package:
                    return _discard(store, added)  # older records unindexed: the next search rebuilds
                manifest = Manifest(engine.id, engine.dim)
            if manifest.engine != engine.id or manifest.dim != engine.dim:
                return _discard(store, added)  # the next search rebuilds with the configured engine
            for seg_key, docs in added:
                manifest.segments.append(seg_key)
                manifest.docs.append(docs)
            if retired:
                manifest.deleted = sorted(set(manifest.deleted) | set(retired))
                manifest.retired_into.update(retired)
            try:
                store.put_manifest(tenant, package, manifest)
            except ManifestConflict:
                continue
            CACHE.expire((tenant, package))
            self._unless_forgotten(tenant, package, [r["id"] for r in records])
            if len(manifest.segments) > COMPACT_NOW_AT:
                compact(self.deps, tenant, package)
            return None
        _discard(store, added)
        self.drop_index(tenant, package)  # contention: drop it; the next search rebuilds from the log
        return None

    def _unless_forgotten(self, tenant: str, package: str, ids: list[str]) -> None:
        """Close the race with a forget of one of these ids: its tombstone is written before its index
        hook runs, so either that hook sees this segment or this check sees the tombstone."""
        if not ids:
            return
        ref = PackageRef(tenant, package)
        if not self.deps.log.may_have_tombstones(ref):
            # No forget was ever claimed here: a forget claims the head before it writes its tombstone
            # and runs its index hook after, so one claimed from now on finds this segment in the
            # manifest put above. Saves reading back every row of the upload (a 20k-record ingest:
            # 200 BatchGetItem calls, 6% of its CPU on the local stack).
            return
        active = self.deps.log.active_ids(ref, set(ids))
        for rid in sorted(set(ids) - active):
            self.forgotten(tenant, package, rid)

    def forgotten(self, tenant: str, package: str, record_id: str) -> int:
        """Remove the memory from the index; if that fails, drop the whole index (the next search
        rebuilds it from the log, which no longer holds the memory). Raises only if both fail."""
        try:
            return self._forget(tenant, package, record_id)
        except Exception:
            self.drop_index(tenant, package)
            return -1

    def _forget(self, tenant: str, package: str, record_id: str) -> int:
        """Remove a memory (and every id folded into it) from every segment; returns segments rewritten.

        Unreferenced segments (a writer that failed between its segment and the manifest) are read
        too, and purged if they hold the memory.
        """
        from acx.adapters.search_index import ManifestConflict
        from acx.core.search.segment import Segment, SegmentError

        store = self.deps.search_index()
        for _ in range(MAX_RETRIES):
            manifest = store.manifest(tenant, package)
            if manifest is None:
                return self._purge_orphans(store, tenant, package, {record_id}, set())
            drop = _folded(record_id, manifest.retired_into)
            replaced: list[str] = []
            new_keys: list[str] = []
            segments, docs = [], []
            for seg_key, count in zip(manifest.segments, manifest.docs, strict=True):
                try:
                    seg = Segment.from_bytes(store.get_segment(seg_key))
                except SegmentError:
                    replaced.append(seg_key)  # unreadable: dropped (the next search rebuilds)
                    continue
                if not drop & set(seg.ids):
                    segments.append(seg_key)
                    docs.append(count)
                    continue
                kept = seg.without(drop)
                replaced.append(seg_key)
                if len(kept):
                    new_key = store.put_segment(tenant, package, kept.to_bytes())
                    new_keys.append(new_key)
                    segments.append(new_key)
                    docs.append(len(kept))
            manifest.segments, manifest.docs = segments, docs
            manifest.deleted = [i for i in manifest.deleted if i not in drop]
            manifest.retired_into = {k: v for k, v in manifest.retired_into.items() if k not in drop}
            try:
                store.put_manifest(tenant, package, manifest)
            except ManifestConflict:
                for key in new_keys:
                    store.purge(key)
                continue
            for key in replaced:
                store.purge(key)
            CACHE.drop((tenant, package))
            return len(replaced) + self._purge_orphans(store, tenant, package, drop, set(segments))
        self.drop_index(tenant, package)
        return -1

    def _purge_orphans(
        self, store: SearchIndexPort, tenant: str, package: str, drop: set[str], live: set[str]
    ) -> int:
        from acx.adapters.search_index import SegmentMissing
        from acx.core.search.segment import Segment, SegmentError

        purged = 0
        for key in store.segment_keys(tenant, package):
            if key in live:
                continue
            try:
                holds = bool(drop & set(Segment.from_bytes(store.get_segment(key)).ids))
            except SegmentError:
                holds = True
            except SegmentMissing:
                holds = True  # only old versions left: purge them
            if holds:
                store.purge(key)
                purged += 1
        return purged

    def drop_index(self, tenant: str, package: str) -> None:
        """Delete the package's whole index (every version): the next search rebuilds it from the log."""
        store = self.deps.search_index()
        for key in store.segment_keys(tenant, package):
            store.purge(key)
        store.purge(store.prefix(tenant, package) + "manifest.json")
        CACHE.drop((tenant, package))


def _discard(store: SearchIndexPort, added: list[tuple[str, int]]) -> None:
    for seg_key, _ in added:
        store.purge(seg_key)


def _folded(record_id: str, retired_into: dict[str, str]) -> set[str]:
    """The id and every id folded into it, transitively (a folded id's text lives on in its survivor)."""
    out = {record_id}
    changed = True
    while changed:
        changed = False
        for retired, survivor in retired_into.items():
            if survivor in out and retired not in out:
                out.add(retired)
                changed = True
    return out


def compact(deps: Deps, tenant: str, package: str) -> dict[str, int]:
    """Merge the package's segments into one, dropping superseded and retired docs (O(package))."""
    from acx.adapters.search_index import Manifest, ManifestConflict
    from acx.core.search.segment import Segment, live_masks, merge

    store = deps.search_index()
    for _ in range(MAX_RETRIES):
        manifest = store.manifest(tenant, package)
        if manifest is None or (len(manifest.segments) <= 1 and not manifest.deleted):
            return {"segments": 0 if manifest is None else len(manifest.segments), "compacted": 0}
        segments = [Segment.from_bytes(store.get_segment(k)) for k in manifest.segments]
        masks = {id(s): m for s, m in zip(segments, live_masks(segments, set(manifest.deleted)), strict=True)}

        def live(seg: Segment, i: int, masks: dict[int, list[bool]] = masks) -> bool:
            return masks[id(seg)][i]

        merged = merge(segments, manifest.engine, manifest.dim, live)
        new_key = store.put_segment(tenant, package, merged.to_bytes())
        fresh = Manifest(manifest.engine, manifest.dim, [new_key], [len(merged)], etag=manifest.etag)
        try:
            store.put_manifest(tenant, package, fresh)
        except ManifestConflict:
            store.purge(new_key)
            continue
        CACHE.expire((tenant, package))
        for key in manifest.segments:
            store.purge(key)
        return {"segments": len(manifest.segments), "compacted": 1}
    return {"segments": -1, "compacted": 0}


def compact_due(deps: Deps, packages: list[tuple[str, str]]) -> int:
    """The background step: compact every listed package whose index has more than ``COMPACT_AT``
    segments (the scheduled run passes the packages it verified)."""
    store = deps.search_index()
    done = 0
    for tenant, package in packages:
        manifest = store.manifest(tenant, package)
        if manifest is not None and (len(manifest.segments) > COMPACT_AT or len(manifest.deleted) > 1000):
            done += compact(deps, tenant, package)["compacted"]
    return done
