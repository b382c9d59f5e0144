"""Load test of the local stack: concurrent clients over HTTP, then a consistency check of what they saw.

    python scripts/load.py --clients 16 --seconds 60 --packages 3

Starts ``acx.local.stack.LocalStack`` (its embedded backend stands in for AWS: the numbers are the
local stack's, not AWS's), then runs ``--clients`` threads for ``--seconds`` against ``--packages``
packages of one tenant, mixing inline uploads (small bundles of distinct records; an Idempotency-Key
is sometimes sent again with the same body on purpose), paginated recalls, forgets of records the
client itself uploaded and got acknowledged, and exports followed by a cartridge GET. Every loop is
bounded in count and time, and every request goes to 127.0.0.1.

Afterwards: requests/s, p50/p95/p99 per route, 5xx count (a 503 with Retry-After is retried by the
client, up to 5 times, and counted separately), and the checks: every acknowledged record that was not
forgotten is present via recall, every forgotten one is absent, every package log verifies ``ok``.
Exits 1 when any expectation fails.

About 430 lines, one script: the load, its bookkeeping and the checks of what it saw go together.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

MAX_OPS_PER_CLIENT = 100_000
MAX_503_RETRIES = 5
MAX_RECALL_PAGES = 5
MAX_CHECK_PAGES = 2_000
HTTP_TIMEOUT = 60.0
# Statuses each route may answer without failing an expectation (besides 2xx).
ALLOWED = {
    "GET cartridge": {410},  # revoked by a concurrent forget of a record it held
    "GET memories (new pkg)": {404},  # no upload to the package had been acknowledged yet
}


@dataclass
class Stats:
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    retried_503: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    gave_up_503: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    transport_errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    problems: list[str] = field(default_factory=list)

    def record(self, route: str, status: int, ms: float) -> None:
        with self.lock:
            self.latencies[route].append(ms)
            self.statuses[route][status] += 1

    def problem(self, text: str) -> None:
        with self.lock:
            if len(self.problems) < 200:
                self.problems.append(text)


@dataclass
class Ledger:
    """What the clients were told: acknowledged and forgotten record ids per package."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    forgotten: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    in_doubt: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # 503 after all retries
    accepted_entries: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    forget_entries: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Http:
    def __init__(self, endpoint: str, token: str, stats: Stats) -> None:
        if not endpoint.startswith("http://127.0.0.1:"):
            raise SystemExit(f"refusing to load anything but 127.0.0.1: {endpoint}")
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.stats = stats

    def once(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        req = urllib.request.Request(self.endpoint + path, data=data, method=method)  # noqa: S310 - 127.0.0.1
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:  # noqa: S310
                status, hdrs, raw = resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as exc:
            status, hdrs, raw = exc.code, dict(exc.headers.items()), exc.read()
        try:
            doc = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            doc = raw.decode("utf-8", "replace")
        return status, {k.lower(): v for k, v in hdrs.items()}, doc

    def call(
        self, route: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """One logical request; a 503 + Retry-After is retried (bounded). Every attempt is timed."""
        for attempt in range(MAX_503_RETRIES + 1):
            started = time.perf_counter()
            try:
                status, hdrs, doc = self.once(method, path, body, headers)
            except OSError as exc:
                self.stats.transport_errors[route] += 1
                self.stats.problem(f"{route}: transport error {type(exc).__name__}")
                return 0, None
            self.stats.record(route, status, (time.perf_counter() - started) * 1000)
            if status == 503 and "retry-after" in hdrs and attempt < MAX_503_RETRIES:
                with self.stats.lock:
                    self.stats.retried_503[route] += 1
                time.sleep(min(float(hdrs["retry-after"]), 2.0) * random.uniform(0.5, 1.0))
                continue
            if status == 503:
                with self.stats.lock:
                    self.stats.gave_up_503[route] += 1
            return status, doc
        return 503, None  # pragma: no cover - the loop always returns


# Each record's text is its own knowledge: templated texts that differ only in their numbers are near
# copies of each other by the forget rule, so forgetting one would (rightly) refuse its siblings.
_SYLLABLES = ("ka", "lo", "mi", "nu", "pe", "ri", "so", "ta", "ve", "zu", "bri", "dax", "fen", "gor", "hul")


def _words(seed: str, n: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in range(n))


def record_of(client: int, n: int, i: int, run: str) -> dict[str, Any]:
    rid = f"c{client:02d}-{n:05d}-{i}"
    return {
        "id": rid,
        "title": f"Load lesson {rid}",
        "summary": f"Run {run}: client {client} bundle {n} item {i}: {_words(run + rid, 12)}.",
        "sourceType": "incident",
        "repoId": None,
        "repoLabel": "platform",
        "projectLabel": "load",
        "timestamp": "2026-03-14T09:21:00Z",
        "impact": "neutral",
        "xpAwarded": i,
        "tags": ["load", f"c{client}"],
        "portable": True,
        "codebaseFingerprint": None,
    }


def bundle(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schemaVersion": "acx.memory-bundle/1", "records": records, "knowledge": [], "skills": []}


def client_loop(
    cid: int,
    http: Http,
    packages: list[str],
    ledger: Ledger,
    stats: Stats,
    deadline: float,
    run: str,
    seed: int,
) -> None:
    rng = random.Random(seed * 1000 + cid)
    mine: dict[str, list[str]] = defaultdict(list)  # acked, not yet forgotten, by package
    keyed: list[tuple[str, str, dict[str, Any], Any]] = []  # (pkg, key, body, first answer)
    n = 0
    for _ in range(MAX_OPS_PER_CLIENT):
        if time.monotonic() >= deadline:
            return
        pkg = rng.choice(packages)
        op = rng.random()
        if op < 0.50:
            if keyed and rng.random() < 0.15:  # the same Idempotency-Key and body again, on purpose
                kpkg, key, body, first = rng.choice(keyed)
                status, doc = http.call(
                    "POST bundles (replay)",
                    "POST",
                    f"/v1/packages/{kpkg}/bundles",
                    body,
                    {"Idempotency-Key": key},
                )
                if status != 201 or doc != first:
                    stats.problem(f"idempotent replay {key}: {status} differs from the first answer")
                continue
            n += 1
            records = [record_of(cid, n, i, run) for i in range(rng.randint(1, 4))]
            body = bundle(records)
            key = uuid.uuid4().hex if rng.random() < 0.5 else None
            status, doc = http.call(
                "POST bundles",
                "POST",
                f"/v1/packages/{pkg}/bundles",
                body,
                {"Idempotency-Key": key} if key else None,
            )
            ids = [r["id"] for r in records]
            if status == 201:
                with ledger.lock:
                    ledger.acked[pkg].update(ids)
                    ledger.accepted_entries[pkg] += int(doc.get("accepted", 0)) + int(doc.get("merged", 0))
                mine[pkg].extend(ids)
                if key:
                    keyed.append((pkg, key, body, doc))
            elif status in (0, 503):
                with ledger.lock:
                    ledger.in_doubt[pkg].update(ids)
            else:
                stats.problem(f"POST bundles {pkg}: unexpected {status} {str(doc)[:200]}")
        elif op < 0.78:
            cursor: str | None = None
            known = bool(ledger.acked.get(pkg))
            for _page in range(MAX_RECALL_PAGES):
                q = f"?limit={rng.choice((20, 50, 100))}" + (f"&cursor={cursor}" if cursor else "")
                route = "GET memories" if known else "GET memories (new pkg)"
                status, doc = http.call(route, "GET", f"/v1/packages/{pkg}/memories{q}")
                if status == 404 and not known:
                    break  # not created yet when the request was sent
                if status != 200:
                    stats.problem(f"GET memories {pkg}: unexpected {status} {str(doc)[:200]}")
                    break
                cursor = doc.get("nextCursor")
                if not cursor:
                    break
        elif op < 0.90:
            if not mine[pkg]:
                continue
            rid = mine[pkg].pop(rng.randrange(len(mine[pkg])))
            status, doc = http.call("DELETE memory", "DELETE", f"/v1/packages/{pkg}/memories/{rid}")
            if status == 200:
                with ledger.lock:
                    ledger.forgotten[pkg].add(rid)
                    ledger.forget_entries[pkg] += 1
            elif status in (0, 503):
                with ledger.lock:
                    ledger.in_doubt[pkg].add(rid)
            else:
                stats.problem(f"DELETE {pkg}/{rid}: unexpected {status} {str(doc)[:200]}")
        else:
            if not ledger.acked.get(pkg):
                continue
            status, doc = http.call("POST cartridges", "POST", f"/v1/packages/{pkg}/cartridges", {})
            if status not in (201, 202):
                if status != 503:
                    stats.problem(f"POST cartridges {pkg}: unexpected {status} {str(doc)[:200]}")
                continue
            status, doc = http.call(
                "GET cartridge", "GET", f"/v1/packages/{pkg}/cartridges/{doc['cartridgeId']}"
            )
            if status not in (200, *ALLOWED["GET cartridge"]):
                stats.problem(f"GET cartridge {pkg}: unexpected {status} {str(doc)[:200]}")


def check(http: Http, packages: list[str], ledger: Ledger, stats: Stats) -> list[tuple[str, str, bool]]:
    """(package, description, ok) rows; every acked-and-kept record present, forgotten ones absent."""
    rows: list[tuple[str, str, bool]] = []
    for pkg in packages:
        present: list[str] = []
        cursor: str | None = None
        exists = True
        for _ in range(MAX_CHECK_PAGES):
            q = "?limit=200" + (f"&cursor={cursor}" if cursor else "")
            status, doc = http.call("GET memories (check)", "GET", f"/v1/packages/{pkg}/memories{q}")
            if status == 404:
                exists = False
                break
            if status != 200 or doc.get("corrupt"):
                rows.append((pkg, f"recall failed: {status}", False))
                break
            present.extend(r["id"] for r in doc["records"])
            cursor = doc.get("nextCursor")
            if not cursor:
                break
        got = set(present)
        kept = ledger.acked[pkg] - ledger.forgotten[pkg]
        missing = kept - got
        resurrected = ledger.forgotten[pkg] & got
        unknown = got - ledger.acked[pkg] - ledger.in_doubt[pkg]
        rows.append((pkg, f"{len(kept)} acked+kept records present (missing {len(missing)})", not missing))
        rows.append(
            (
                pkg,
                f"{len(ledger.forgotten[pkg])} forgotten records absent (present {len(resurrected)})",
                not resurrected,
            )
        )
        rows.append(
            (pkg, f"no duplicate ids in recall ({len(present) - len(got)} dup)", len(present) == len(got))
        )
        rows.append((pkg, f"no record nobody was told about ({len(unknown)} unknown)", not unknown))
        for rid in sorted(missing)[:5]:
            stats.problem(f"{pkg}: acknowledged {rid} missing")
        for rid in sorted(unknown)[:5]:
            stats.problem(f"{pkg}: {rid} present but never acknowledged")
        if not exists:
            rows.append((pkg, "package exists", not ledger.acked[pkg]))
            continue
        status, doc = http.call("GET log/verify", "GET", f"/v1/packages/{pkg}/log/verify")
        ok = status == 200 and isinstance(doc, dict) and doc.get("status") == "ok"
        rows.append((pkg, f"log verifies ok ({doc.get('status') if isinstance(doc, dict) else status})", ok))
        status, head = http.call("GET log", "GET", f"/v1/packages/{pkg}/log")
        if status == 200:
            expected = ledger.accepted_entries[pkg] + ledger.forget_entries[pkg]
            size = int(head["size"])
            writes_retried = sum(
                v for r, v in stats.retried_503.items() if r.startswith(("POST bundles", "DELETE"))
            )
            strict = not ledger.in_doubt[pkg] and not writes_retried  # a retried write may land twice
            rows.append(
                (
                    pkg,
                    f"log size {size} == acked entries {expected}"
                    + ("" if strict else " (not checked: writes retried/in doubt)"),
                    size == expected or not strict,
                )
            )
    return rows


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--packages", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tenant", default="load")
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 256 and 0 < args.seconds <= 3600 and 1 <= args.packages <= 50):
        parser.error("clients 1..256, seconds 0..3600, packages 1..50")

    from acx.local.stack import LocalStack

    run = uuid.uuid4().hex[:8]
    packages = [f"load-{run}-{i}" for i in range(args.packages)]
    stats = Stats()
    ledger = Ledger()
    print("[load] starting the local stack (embedded backend) ...", file=sys.stderr, flush=True)
    with LocalStack(port=0, quiet=True, verify_interval=None) as stack:
        http = Http(stack.endpoint, stack.token(args.tenant), stats)
        print(
            f"[load] {args.clients} clients x {args.seconds:.0f}s on {args.packages} packages at "
            f"{stack.endpoint}",
            file=sys.stderr,
            flush=True,
        )
        started = time.monotonic()
        deadline = started + args.seconds
        threads = [
            threading.Thread(
                target=client_loop,
                name=f"load-{i}",
                daemon=True,
                args=(i, http, packages, ledger, stats, deadline, run, args.seed),
            )
            for i in range(args.clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=args.seconds + 2 * HTTP_TIMEOUT * (MAX_503_RETRIES + 1))
        elapsed = time.monotonic() - started
        stuck = [t.name for t in threads if t.is_alive()]
        load_requests = sum(len(v) for v in stats.latencies.values())
        print(f"[load] load phase done in {elapsed:.1f}s; checking ...", file=sys.stderr, flush=True)
        rows = check(http, packages, ledger, stats)
        stack_errors = list(stack.errors)

    # ------------------------------------------------------------------ report
    print(f"\nload: {args.clients} clients, {args.seconds:.0f}s, {args.packages} packages (embedded backend)")
    print(
        f"requests (attempts) during load: {load_requests} in {elapsed:.1f}s = "
        f"{load_requests / elapsed:.1f} req/s overall\n"
    )
    header = (
        f"{'route':<26}{'n':>7}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'2xx':>7}{'4xx':>6}{'5xx':>6}{'503 retried':>13}{'503 gave up':>13}"
    )
    print(header)
    print("-" * len(header))
    total_5xx = 0
    unexpected_4xx = 0
    for route in sorted(stats.latencies):
        lat = stats.latencies[route]
        st = stats.statuses[route]
        n2 = sum(c for s, c in st.items() if 200 <= s < 300)
        n4 = sum(c for s, c in st.items() if 400 <= s < 500)
        n5 = sum(c for s, c in st.items() if s >= 500 and s != 503)
        total_5xx += n5
        unexpected_4xx += sum(
            c for s, c in st.items() if 400 <= s < 500 and s not in ALLOWED.get(route, set())
        )
        print(
            f"{route:<26}{len(lat):>7}{len(lat) / elapsed:>8.1f}{pct(lat, 50):>9.0f}{pct(lat, 95):>9.0f}"
            f"{pct(lat, 99):>9.0f}{max(lat):>9.0f}{n2:>7}{n4:>6}{n5:>6}{stats.retried_503[route]:>13}"
            f"{stats.gave_up_503[route]:>13}"
        )
    print()
    gave_up = sum(stats.gave_up_503.values())
    transport = sum(stats.transport_errors.values())
    expectations = [
        ("", f"5xx other than retryable 503: {total_5xx}", total_5xx == 0),
        ("", f"503 still failing after {MAX_503_RETRIES} retries: {gave_up}", gave_up == 0),
        ("", f"unexpected 4xx: {unexpected_4xx}", unexpected_4xx == 0),
        ("", f"transport errors: {transport}", transport == 0),
        ("", f"client threads stuck: {len(stuck)}", not stuck),
        ("", f"local stack errors: {len(stack_errors)}", not stack_errors),
        ("", f"client-side problems: {len(stats.problems)}", not stats.problems),
        *rows,
    ]
    width = max(len(p) for p, _, _ in expectations) + 2
    print(f"{'package':<{width}}{'expectation':<70}result")
    for pkg, text, ok in expectations:
        print(f"{pkg or '-':<{width}}{text:<70}{'ok' if ok else 'FAIL'}")
    for line in stats.problems[:20]:
        print(f"  problem: {line}")
    for line in stack_errors[:10]:
        print(f"  stack: {line}")
    failed = [t for _, t, ok in expectations if not ok]
    print(f"\n{'FAIL' if failed else 'OK'}: {len(expectations) - len(failed)}/{len(expectations)} met")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
