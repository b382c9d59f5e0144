"""Plain words to ACX memory records: the one place the CLI, the MCP server and ``acx.Memory`` build them.

An agent knows what it learned, not the record format. :func:`build_record` fills in what it cannot
know: a stable id derived from the content (a retry writes the same id, so it lands once), a title
from the text when none is given, the timestamp, and the defaults of the standard's other fields.

A repo-bound lesson (``repo=``) is fingerprinted here, on the client: the repository's git origin is
reduced to its canonical identity (ACX v0.1 §7) and keyed with the installation salt, and only the
``cbf1_`` fingerprint leaves the machine (``portable=false``, ``repoId`` null). The salt is created
on first use where ``acx init`` puts it, and where it was created is said on stderr.

Imports stay light (hashlib, datetime): the CLI's start-up time is measured.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

# The standard's defaults for what a plain-words memory does not say.
DEFAULT_SOURCE_TYPE = "agent-note"
DEFAULT_IMPACT = "neutral"
DEFAULT_XP = 0
PORTABLE_LABEL = "portable-core"  # repoLabel / projectLabel of a transferable memory
FIELD_LABEL = "field-learned"  # the same for a repo-bound memory: the repo's name is never sent
TITLE_MAX = 80  # a derived title: the first sentence, cut at a word boundary
ID_PREFIX = "mem-"
ID_HEX = 16  # 64 bits of sha256: distinct lessons never share an id in practice
TEXT_MAX = 16_384  # the service's summary limit (acx.core.bundle.Limits.max_summary)
TAGS_MAX = 64
BATCH_MAX = 50  # plain-words memories in one call (one bundle)
IMPACTS = ("positive", "neutral", "negative")
BUNDLE_SCHEMA = "acx.memory-bundle/1"
_TAG_RE = re.compile(r"^[^\x00-\x1f]{1,128}$")


class RecordInputError(ValueError):
    """Plain words that cannot become a record (empty text, a bad tag, no repository found)."""


def derive_title(text: str) -> str:
    """The first sentence (or line) of ``text``, at most :data:`TITLE_MAX` characters, cut at a word."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    match = re.match(r"^(.+?[.!?])(\s|$)", first)
    title = match.group(1) if match else first
    if len(title) > TITLE_MAX:
        cut = title[: TITLE_MAX - 1].rsplit(" ", 1)[0] or title[: TITLE_MAX - 1]
        title = cut.rstrip(" ,;:") + "…"
    return title


def memory_id(summary: str, title: str, fingerprint: str | None) -> str:
    """``mem-`` + 16 hex of sha256 over the normalised text and the tier: the same lesson, the same id."""
    norm = " ".join(summary.split()).lower() + "\n" + " ".join(title.split()).lower()
    digest = hashlib.sha256(f"{norm}\n{fingerprint or 'portable'}".encode()).hexdigest()
    return ID_PREFIX + digest[:ID_HEX]


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with milliseconds (``2026-12-03T13:20:30.123Z``)."""
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _clean_tags(tags: list[str] | tuple[str, ...] | None) -> list[str]:
    out: list[str] = []
    for tag in tags or ():
        if not isinstance(tag, str) or not _TAG_RE.fullmatch(tag.strip()):
            raise RecordInputError("each tag must be 1-128 characters of text")
        if tag.strip() not in out:
            out.append(tag.strip())
    if len(out) > TAGS_MAX:
        raise RecordInputError(f"at most {TAGS_MAX} tags")
    return out


def build_record(
    text: str,
    *,
    title: str | None = None,
    tags: list[str] | tuple[str, ...] | None = None,
    impact: str | None = None,
    fingerprint: str | None = None,
    source_type: str | None = None,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """An ACX v0.1 memory record from plain words; ``fingerprint`` (``cbf1_...``) makes it repo-bound."""
    summary = (text or "").strip()
    if not summary:
        raise RecordInputError("the memory's text is empty: say what was learned")
    if len(summary) > TEXT_MAX:
        raise RecordInputError(f"the text is {len(summary)} characters; at most {TEXT_MAX}")
    impact = impact or DEFAULT_IMPACT
    if impact not in IMPACTS:
        raise RecordInputError(f"impact must be one of {', '.join(IMPACTS)}")
    title = (title or "").strip() or derive_title(summary)
    label = FIELD_LABEL if fingerprint else PORTABLE_LABEL
    return {
        "id": memory_id(summary, title, fingerprint),
        "title": title,
        "summary": summary,
        "sourceType": source_type or DEFAULT_SOURCE_TYPE,
        "repoId": None,
        "repoLabel": label,
        "projectLabel": label,
        "timestamp": timestamp or now_rfc3339(),
        "impact": impact,
        "xpAwarded": DEFAULT_XP,
        "tags": _clean_tags(tags),
        "portable": fingerprint is None,
        "codebaseFingerprint": fingerprint,
    }


def revise_record(
    current: dict[str, Any],
    text: str,
    *,
    title: str | None = None,
    tags: list[str] | tuple[str, ...] | None = None,
    impact: str | None = None,
) -> dict[str, Any]:
    """``current`` with a new summary (same id): the title is replaced when given, or re-derived when
    the old one was derived from the old text; other fields stay, a stale artifactFingerprint goes."""
    summary = (text or "").strip()
    if not summary:
        raise RecordInputError("the new text is empty: say what holds now")
    if len(summary) > TEXT_MAX:
        raise RecordInputError(f"the text is {len(summary)} characters; at most {TEXT_MAX}")
    out = dict(current)
    old_title = str(current.get("title") or "")
    if title and title.strip():
        out["title"] = title.strip()
    elif not old_title or old_title == derive_title(str(current.get("summary") or "")):
        out["title"] = derive_title(summary)
    out["summary"] = summary
    if tags is not None:
        out["tags"] = _clean_tags(tags)
    if impact is not None:
        if impact not in IMPACTS:
            raise RecordInputError(f"impact must be one of {', '.join(IMPACTS)}")
        out["impact"] = impact
    out.pop("artifactFingerprint", None)
    return out


def bundle_of(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The upload bundle (one format for plain words and full records alike)."""
    return {"schemaVersion": BUNDLE_SCHEMA, "records": records, "knowledge": [], "skills": []}


# -- repository identity and the installation salt ----------------------------------------------------


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(  # noqa: S603 - fixed git arguments, no shell
            ["git", "-C", str(cwd), *args],  # noqa: S607 - git from PATH, as the user runs it
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def repo_identity(repo: str | os.PathLike[str] | None = None) -> str:
    """Canonical repository identity: of a git origin URL, or of the checkout at a path (default: the
    working directory): its ``origin`` remote, else its first remote, else ``commit:<root commit>``."""
    from acx.core.fingerprint import canonical_repo_identity

    target = "." if repo is None or str(repo) in ("", ".", "true") else str(repo)
    path = Path(target).expanduser()
    if not path.is_dir():
        if any(c.isspace() for c in target) or not ("/" in target or ":" in target):
            raise RecordInputError(
                f"repo {target[:80]!r} is neither a directory nor a git origin URL (host/path, "
                "https://host/path or git@host:path)"
            )
        try:
            return canonical_repo_identity(target)
        except ValueError as exc:
            raise RecordInputError(f"repo {target!r}: {exc}") from None
    origin = _git(path, "remote", "get-url", "origin")
    if origin is None:
        remotes = (_git(path, "remote") or "").split()
        origin = _git(path, "remote", "get-url", remotes[0]) if remotes else None
    if origin:
        return canonical_repo_identity(origin)
    roots = _git(path, "rev-list", "--max-parents=0", "HEAD")
    if roots:
        return f"commit:{sorted(roots.split())[0].lower()}"
    raise RecordInputError(
        f"{path.resolve()} is not a git checkout with a remote or a commit: pass the repository's "
        "origin URL as repo"
    )


def salt_path() -> Path:
    """Where the installation salt lives: ``$ACX_SALT_FILE`` or ``~/.config/acx/salt`` (``acx init``)."""
    env = os.environ.get("ACX_SALT_FILE")
    return Path(env) if env else Path.home() / ".config" / "acx" / "salt"


def installation_salt(path: Path | None = None, *, create: bool = True) -> bytes:
    """The installation salt; created (256 bits, mode 0600) on first use, saying where on stderr."""
    import secrets

    path = path or salt_path()
    if not path.exists() and create:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process created it first: read theirs
        else:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(secrets.token_hex(32) + "\n")
            print(
                f"acx: created this installation's salt at {path} (repo fingerprints depend on it: "
                "keep it, never share it)",
                file=sys.stderr,
            )
    try:
        text = path.read_text(encoding="ascii").strip()
        salt = bytes.fromhex(text)
    except OSError as exc:
        raise RecordInputError(f"cannot read the installation salt {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError):
        raise RecordInputError(f"{path}: not a salt file (expected hex text from acx init)") from None
    if len(salt) < 32:
        raise RecordInputError(f"{path}: salt shorter than 32 bytes")
    return salt


def repo_fingerprint(repo: str | os.PathLike[str] | None = None, salt: bytes | None = None) -> str:
    """The ``cbf1_`` codebase fingerprint of ``repo`` (default: the working directory's checkout)."""
    from acx.core.fingerprint import codebase_fingerprint

    return codebase_fingerprint(salt if salt is not None else installation_salt(), repo_identity(repo))
