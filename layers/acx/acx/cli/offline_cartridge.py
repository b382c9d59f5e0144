"""``acx inspect | verify | strip | import``: offline cartridge tools (no network, no AWS).

Exit codes: 0 ok (verify: trusted/local), 1 portable/legacy, 2 unreadable/invalid input, 4 tampered.
Heavy imports stay inside the command functions (CLI start-up time is measured).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acx.core.embedding import EmbeddingEngine

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

EXIT_OK, EXIT_NOT_TRUSTED, EXIT_INVALID, EXIT_TAMPERED = 0, 1, 2, 4


def register(subparsers: Any) -> None:
    """Add the four cartridge commands to the ``acx`` dispatcher."""
    p = subparsers.add_parser("inspect", help="show a cartridge's meta, counts, skills and signature")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = subparsers.add_parser(
        "verify", help="verify a cartridge offline (tampered/legacy/portable/trusted/local)"
    )
    p.add_argument("file")
    p.add_argument("--registry", help="acx.trust-registry/1 JSON file")
    p.add_argument("--public-key", help="SPKI PEM file of the expected signer")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser("strip", help="copy a cartridge without its SAVE zone")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_strip)

    p = subparsers.add_parser("import", help="verify, re-index and merge a cartridge into a local store")
    p.add_argument("file")
    p.add_argument("--into", required=True, help="local store directory")
    p.add_argument("--registry")
    p.add_argument("--public-key")
    p.add_argument(
        "--engine",
        default="local-hash-128",
        choices=["local-hash-128", "minilm-l6-v2-int8-384"],
        help="the store's engine: every record is re-indexed with it; the cartridge's vectors are discarded",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_import)


def _emit(args: argparse.Namespace, doc: dict[str, Any], human: str) -> None:
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(human.rstrip() + "\n")


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    sys.stderr.write(f"acx: {message}\n")
    return code


def inspect_doc(path: str) -> dict[str, Any]:
    """Everything ``acx inspect`` shows, as a dict."""
    from acx.core import dsse
    from acx.core.cartridge import CartridgeReader, log_attestation

    with CartridgeReader(path) as r:
        sig = r.signature()
        signed: dict[str, Any] | None = None
        if sig is not None:
            signed = {"keyid": sig.keyid, "alg": sig.alg, "createdAt": sig.created_at}
            try:
                pred = dsse.parse_envelope(sig.envelope).statement()["predicate"]
                signed["signedAt"] = pred.get("signedAt")
                signed["publisherId"] = pred.get("publisherId")
            except dsse.DsseError as exc:
                signed["error"] = str(exc)
        checkpoint = log_attestation.summary(r)
        return {
            "file": path,
            "applicationId": 1094932529,
            "userVersion": r.user_version,
            "meta": r.meta(),
            "counts": r.counts(),
            "skills": r.skills(),
            "signature": signed,
            "checkpoint": checkpoint,
        }


def cmd_inspect(args: argparse.Namespace) -> int:
    """``acx inspect FILE``."""
    from acx.core.cartridge import CartridgeError

    try:
        doc = inspect_doc(args.file)
    except CartridgeError as exc:
        return _fail(f"{args.file}: {exc}")
    meta = doc["meta"]
    counts = doc["counts"]
    objects = "; ".join(f"{kind} {_by_zone(zones)}" for kind, zones in sorted(counts["objects"].items()))
    lines = [
        f"{args.file}: ACX {meta.get('acx.spec_version', '?')} cartridge {meta.get('acx.cartridge_id', '?')}",
        f"  publisher {meta.get('acx.publisher_id')}  artifact {meta.get('acx.artifact_id')}"
        f"@{meta.get('acx.artifact_version')}",
        f"  memory {_by_zone(counts['memory'])}  vectors {_by_zone(counts['vectors'])}"
        f"  files {counts['files']}",
        f"  objects {objects or '-'}",
        f"  skills {', '.join(s['name'] for s in doc['skills']) or '-'}",
    ]
    sig = doc["signature"]
    lines.append(f"  signature {sig['keyid']} signed {sig.get('signedAt')}" if sig else "  unsigned (legacy)")
    cp = doc["checkpoint"]
    if cp:
        lines.append(
            f"  log checkpoint {cp.get('origin')} size {cp.get('treeSize')}, "
            f"{cp.get('proofs')} inclusion proof(s) in {cp.get('file')}"
        )
    _emit(args, doc, "\n".join(lines))
    return EXIT_OK


def _by_zone(counts: dict[str, int]) -> str:
    """``{"rom": 3, "save": 1}`` as ``rom 3, save 1`` (``0`` when empty)."""
    return ", ".join(f"{zone} {n}" for zone, n in sorted(counts.items())) or "0"


def _load_trust(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    registry = json.loads(Path(args.registry).read_text(encoding="utf-8")) if args.registry else None
    pem = Path(args.public_key).read_text(encoding="ascii") if args.public_key else None
    return registry, pem


def _verdict_code(verdict: str) -> int:
    return {"trusted": EXIT_OK, "local": EXIT_OK, "tampered": EXIT_TAMPERED}.get(verdict, EXIT_NOT_TRUSTED)


def cmd_verify(args: argparse.Namespace) -> int:
    """``acx verify FILE [--registry R] [--public-key PEM]``."""
    from acx.core.cartridge import CartridgeError
    from acx.core.trust import evaluate

    try:
        registry, pem = _load_trust(args)
        v = evaluate(args.file, registry, pem)
    except (OSError, ValueError, CartridgeError) as exc:
        return _fail(f"{args.file}: {exc}")
    inc = v.inclusion or {}
    if not inc.get("present"):
        log_line = "  log checkpoint: none embedded\n"
    elif v.verdict == "tampered":
        log_line = "  log checkpoint: present, not relied on (the cartridge is tampered)\n"
    elif "treeSize" not in inc:
        log_line = "  log checkpoint: present but does not verify\n"
    else:
        failed = int(inc.get("failed") or 0)
        proven = int(inc.get("checked") or 0) - failed
        log_line = (
            f"  log checkpoint {inc.get('origin')} size {inc.get('treeSize')}: signature ok, "
            f"{proven} of {inc.get('checked')} ROM memories proven included\n"
        )
    human = (
        f"{v.verdict.upper()}  {args.file}\n  keyid {v.keyid}\n  publisher {v.publisherId}\n"
        f"  manifest {v.manifestHash}\n" + log_line + "".join(f"  - {r}\n" for r in v.reasons)
    )
    _emit(args, v.to_dict(), human)
    return _verdict_code(v.verdict)


def cmd_strip(args: argparse.Namespace) -> int:
    """``acx strip IN OUT``: non-zero when the recomputed manifest hash changed."""
    from acx.core.cartridge import CartridgeError, strip_to_rom

    try:
        before, after = strip_to_rom(args.input, args.output)
    except CartridgeError as exc:
        return _fail(f"{args.input}: {exc}")
    equal = before == after
    _emit(
        args,
        {"original": before, "recomputed": after, "equal": equal},
        f"original   {before}\nrecomputed {after}\n{'equal' if equal else 'DIFFERENT'}",
    )
    return EXIT_OK if equal else EXIT_TAMPERED


def import_cartridge(
    path: str,
    into: str | Path,
    *,
    registry: dict[str, Any] | None = None,
    public_key_pem: str | None = None,
    engine: EmbeddingEngine | None = None,
) -> dict[str, Any]:
    """Verify, then merge ROM records into ``into/memory-records.json``; quarantine foreign SAVE records.

    Every record of the store is re-indexed from the JSON baseline (the memory payloads) with the
    store's own ``engine`` (default ``local-hash-128``) into ``into/vectors.json``, tagged with that
    engine; the cartridge's vectors are never read, whatever engine they are tagged with (ACX §7.6).
    Raises ValueError on refusal (tampered, vectors without a baseline). Does NOT stop a trusted
    publisher's bad advice: imported memory informs, never authorizes.
    """
    from acx.core import canonical
    from acx.core.cartridge import CartridgeReader
    from acx.core.embedding import LocalHash128, memory_text
    from acx.core.merge import merge_records
    from acx.core.trust import evaluate

    store = Path(into)
    with CartridgeReader(path) as r:
        v = evaluate(r, registry, public_key_pem)
        if v.verdict == "tampered":
            raise ValueError("refusing a tampered cartridge: " + "; ".join(v.reasons[:3]))
        counts = r.counts()
        n_vectors = sum(counts["vectors"].values())
        n_memory = sum(counts["memory"].values())
        if n_vectors and not n_memory:
            raise ValueError("refusing a cartridge with vectors but no JSON baseline (memory rows)")
        orphans = r.orphan_vectors()
        if orphans:
            raise ValueError(f"refusing a cartridge with {orphans} vector(s) that have no JSON baseline")
        rom: list[dict[str, Any]] = []
        quarantine: dict[str, list[dict[str, Any]]] = {}
        own = engine or LocalHash128()
        tag = {"id": own.id, "dim": own.dim}
        theirs = r.embedding_engine()
        source = r.meta().get("acx.cartridge_id")
        for row in r.iter_memory():
            rec = dict(row.record)
            rec["origin"] = "imported"
            rec["importedFrom"] = source
            rec["embeddingEngine"] = own.id
            if row.zone == "save":
                cbf = rec.get("codebaseFingerprint")
                if not isinstance(cbf, str) or not cbf.startswith("cbf1_") or "/" in cbf:
                    raise ValueError(f"SAVE record {row.id} has no usable codebaseFingerprint")
                rec["foreign"] = True
                quarantine.setdefault(cbf, []).append(rec)
            else:
                rom.append(rec)
    store.mkdir(parents=True, exist_ok=True)
    baseline = store / "memory-records.json"
    existing = canonical.loads(baseline.read_bytes()) if baseline.exists() else []
    merged = merge_records([*existing, *rom])
    baseline.write_bytes(canonical.dumps(merged))
    vectors = dict(zip((m["id"] for m in merged), own.embed([memory_text(m) for m in merged]), strict=True))
    (store / "vectors.json").write_bytes(canonical.dumps({"engine": tag, "vectors": vectors}))
    qdir = store / "quarantine"
    for cbf, recs in quarantine.items():
        qdir.mkdir(exist_ok=True)
        qfile = qdir / f"{cbf}.json"
        old = canonical.loads(qfile.read_bytes()) if qfile.exists() else []
        qfile.write_bytes(canonical.dumps(merge_records([*old, *recs])))
    return {
        "verdict": v.verdict,
        "reasons": v.reasons,
        "imported": len(rom),
        "quarantined": {k: len(x) for k, x in quarantine.items()},
        "discardedVectors": n_vectors,
        "cartridgeEngine": theirs,
        "storeSize": len(merged),
        "engine": tag,
    }


def cmd_import(args: argparse.Namespace) -> int:
    """``acx import FILE --into DIR``."""
    from acx.core.cartridge import CartridgeError

    try:
        registry, pem = _load_trust(args)
        from acx.core.embedding import engine_named

        doc = import_cartridge(
            args.file, args.into, registry=registry, public_key_pem=pem, engine=engine_named(args.engine)
        )
    except CartridgeError as exc:
        return _fail(f"{args.file}: {exc}")
    except ValueError as exc:
        code = EXIT_TAMPERED if "tampered" in str(exc) else EXIT_INVALID
        return _fail(f"{args.file}: {exc}", code)
    except OSError as exc:
        return _fail(f"{args.file}: {exc}")
    except RuntimeError as exc:  # ModelUnavailable: the engine's files are missing or not the pinned ones
        return _fail(f"{args.file}: {exc}")
    _emit(
        args,
        doc,
        f"imported {doc['imported']} ROM record(s) ({doc['verdict']}), quarantined "
        f"{sum(doc['quarantined'].values())} field-learned record(s), discarded "
        f"{doc['discardedVectors']} foreign vector(s); store now {doc['storeSize']}",
    )
    return EXIT_OK
