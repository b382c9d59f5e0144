"""Offline core commands: canon, records check, repo-identity, fingerprint, init, embed, bundle.

JSON on stdout, human errors on stderr; exit 0 ok, 2 invalid input. Imports of the core happen inside
the handlers so that ``acx --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

EXIT_OK = 0
EXIT_INVALID = 2
SALT_BYTES = 32


def register(subparsers: Any) -> None:
    """Add the offline core commands to the ``acx`` parser."""
    p = subparsers.add_parser("canon", help="print the RFC 8785 canonical bytes of a JSON file")
    p.add_argument("file", help="JSON file ('-' for stdin)")
    p.set_defaults(func=cmd_canon)

    p = subparsers.add_parser("records", help="memory record tools")
    sub = p.add_subparsers(dest="records_command", metavar="SUBCOMMAND")
    c = sub.add_parser("check", help="validate a JSON array of memory records, one verdict per record")
    c.add_argument("file", help="JSON file ('-' for stdin)")
    c.set_defaults(func=cmd_records_check)

    p = subparsers.add_parser("repo-identity", help="canonical repository identity of a git origin URL")
    p.add_argument("url")
    p.set_defaults(func=cmd_repo_identity)

    p = subparsers.add_parser("fingerprint", help="codebase fingerprint (cbf1_...) of a repository")
    p.add_argument(
        "--salt-file", help="installation salt file (default $ACX_SALT_FILE or ~/.config/acx/salt)"
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--origin", help="git origin URL")
    group.add_argument("--root-commit", help="root commit sha, for a repository without a remote")
    p.set_defaults(func=cmd_fingerprint)

    p = subparsers.add_parser("init", help="create this installation's secret salt (256 bits, mode 0600)")
    p.add_argument("--salt-file", help="where to write it (default $ACX_SALT_FILE or ~/.config/acx/salt)")
    p.set_defaults(func=cmd_init)

    p = subparsers.add_parser("embed", help="local-hash-128 embedding of a text")
    p.add_argument("text")
    p.set_defaults(func=cmd_embed)

    p = subparsers.add_parser("bundle", help="pack an agent-package directory into an upload bundle")
    p.add_argument("dir", type=Path)
    p.add_argument("-o", "--output", required=True, type=Path, help="bundle file to write")
    p.add_argument(
        "--salt-file",
        help="installation salt, needed for field-learned records (default $ACX_SALT_FILE or "
        "~/.config/acx/salt, where `acx init` writes it)",
    )
    p.set_defaults(func=cmd_bundle)


def _out(value: Any) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n")


def _err(command: str, message: str) -> int:
    sys.stderr.write(f"acx {command}: {message}\n")
    return EXIT_INVALID


def _read(name: str) -> bytes:
    return sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()


def default_salt_path() -> Path:
    """``$ACX_SALT_FILE`` or ``~/.config/acx/salt``."""
    env = os.environ.get("ACX_SALT_FILE")
    return Path(env) if env else Path.home() / ".config" / "acx" / "salt"


def read_salt(path: str | Path) -> bytes:
    """The salt in a salt file (hex text, at least 32 bytes); ValueError names the file, never the salt."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
        salt = bytes.fromhex(text)
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{path}: not a salt file (expected hex text from acx init)") from None
    if len(salt) < SALT_BYTES:
        raise ValueError(f"{path}: salt shorter than {SALT_BYTES} bytes")
    return salt


def cmd_canon(args: argparse.Namespace) -> int:
    """Print canonical bytes exactly (no newline), so the output can be hashed as is.

    Numbers are IEEE doubles (RFC 8785): an integer beyond 2^53-1 is rounded as the RFC does, so the
    output always reads back (``acx canon x | acx canon -`` prints the same bytes).
    """
    from acx.core.canonical import CanonicalError, dumps_record, loads

    try:
        data = _read(args.file)
    except OSError as exc:
        return _err("canon", f"cannot read {args.file}: {exc.strerror}")
    try:
        out = dumps_record(loads(data, ieee_numbers=True))
    except CanonicalError as exc:
        sys.stderr.write(f"{exc.path}: {exc.message}\n")
        return EXIT_INVALID
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return EXIT_OK


def check_records(records: list[Any]) -> list[dict[str, Any]]:
    """One verdict per record, in input order; ``errors`` lists every problem of the record (path:
    what is allowed), ``error`` the first of them."""
    from acx.core.fingerprint import artifact_fingerprint
    from acx.core.records import record_problems, zone_of

    verdicts = []
    for index, record in enumerate(records):
        problems = record_problems(record, f"$[{index}]")
        if problems:
            rid = record.get("id") if isinstance(record, dict) else None
            ok_id = isinstance(rid, str) and not any(p.path == f"$[{index}].id" for p in problems)
            errors = [f"{p.path}: {p.message}" for p in problems]
            verdicts.append(
                {
                    "id": rid if ok_id else None,
                    "ok": False,
                    "error": errors[0],
                    "errors": errors,
                    "artifactFingerprint": None,
                    "zone": None,
                }
            )
            continue
        verdicts.append(
            {
                "id": record["id"],
                "ok": True,
                "error": None,
                "errors": [],
                "artifactFingerprint": artifact_fingerprint(record),
                "zone": zone_of(record),
            }
        )
    return verdicts


def cmd_records_check(args: argparse.Namespace) -> int:
    """Validate each record; exit 2 if any is invalid (the verdicts are printed either way)."""
    from acx.core.canonical import CanonicalError, loads

    source = args.file
    if source != "-" and Path(source).is_dir():  # an agent-package directory: its records file
        source = str(Path(source) / "memory-records.json")
    try:
        doc = loads(_read(source))
    except OSError as exc:
        return _err("records check", f"cannot read {source}: {exc.strerror}")
    except CanonicalError as exc:
        sys.stderr.write(f"{exc.path}: {exc.message}\n")
        return EXIT_INVALID
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):  # a bundle
        doc = doc["records"]
    if not isinstance(doc, list):
        sys.stderr.write(
            "$: expected a records array, a bundle {schemaVersion, records} or a package directory"
            " (docs/FORMATS.md)\n"
        )
        return EXIT_INVALID
    verdicts = check_records(doc)
    _out(verdicts)
    return EXIT_OK if all(v["ok"] for v in verdicts) else EXIT_INVALID


def cmd_repo_identity(args: argparse.Namespace) -> int:
    """Print the identity only: the URL may carry credentials, so it is not echoed."""
    from acx.core.fingerprint import canonical_repo_identity

    try:
        identity = canonical_repo_identity(args.url)
    except ValueError as exc:
        return _err("repo-identity", str(exc))
    _out({"identity": identity})
    return EXIT_OK


def cmd_fingerprint(args: argparse.Namespace) -> int:
    """Print the identity and its codebase fingerprint under this installation's salt."""
    import re

    from acx.core.fingerprint import canonical_repo_identity, codebase_fingerprint

    args.salt_file = args.salt_file or str(default_salt_path())
    try:
        salt = read_salt(args.salt_file)
    except OSError as exc:
        return _err("fingerprint", f"cannot read salt file {args.salt_file}: {exc.strerror}")
    except ValueError as exc:
        return _err("fingerprint", str(exc))
    if args.root_commit is not None:
        sha = args.root_commit.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            return _err("fingerprint", "--root-commit must be a 40 or 64 hex character commit id")
        identity = f"commit:{sha}"
    else:
        try:
            identity = canonical_repo_identity(args.origin)
        except ValueError as exc:
            return _err("fingerprint", str(exc))
    _out({"identity": identity, "codebaseFingerprint": codebase_fingerprint(salt, identity)})
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    """Create a new random owner-only salt; never overwrite one (every fingerprint depends on it)."""
    import secrets

    path = Path(args.salt_file) if args.salt_file else default_salt_path()
    if path.exists():
        return _err("init", f"{path} already exists; refusing to overwrite an installation salt")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _err("init", f"{path} already exists; refusing to overwrite an installation salt")
    except OSError as exc:
        return _err("init", f"cannot create {path}: {exc.strerror}")
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(SALT_BYTES) + "\n")
    os.chmod(path, 0o600)  # the umask may have narrowed it further; never wider
    _out({"saltFile": str(path), "bytes": SALT_BYTES})
    return EXIT_OK


def cmd_embed(args: argparse.Namespace) -> int:
    """Print the engine descriptor and the vector of TEXT."""
    from acx.core.embedding import embed, engine_descriptor

    _out({"engine": engine_descriptor(), "vector": embed(args.text)})
    return EXIT_OK


def cmd_bundle(args: argparse.Namespace) -> int:
    """Pack DIR into a validated, canonical upload bundle at FILE."""
    import hashlib

    from acx.core.bundle import BundleError, parse_bundle
    from acx.core.canonical import CanonicalError
    from acx.core.packing import pack_directory

    if not args.dir.is_dir():
        return _err("bundle", f"{args.dir} is not a directory")
    salt = None
    salt_file = args.salt_file or (str(default_salt_path()) if default_salt_path().is_file() else None)
    if salt_file:  # --salt-file, else $ACX_SALT_FILE or ~/.config/acx/salt where `acx init` wrote it
        args.salt_file = salt_file
        try:
            salt = read_salt(args.salt_file)
        except OSError as exc:
            return _err("bundle", f"cannot read salt file {args.salt_file}: {exc.strerror}")
        except ValueError as exc:
            return _err("bundle", str(exc))
    try:
        bundle = parse_bundle(pack_directory(args.dir, salt))
    except BundleError as exc:
        return _err("bundle", f"{exc.path}: {exc.message}")
    except CanonicalError as exc:
        return _err("bundle", f"memory-records.json {exc.path}: {exc.message}")
    except (OSError, UnicodeDecodeError) as exc:
        return _err("bundle", f"cannot read the package: {exc}")
    data = bundle.canonical_bytes()
    args.output.write_bytes(data)
    _out(
        {
            "file": str(args.output),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "records": len(bundle.records),
            "knowledge": len(bundle.knowledge),
            "skills": len(bundle.skills),
        }
    )
    return EXIT_OK
