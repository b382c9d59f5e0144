"""The ACX memory record (standard v0.1 §7) and its validation.

Records travel as plain dicts. :func:`validate_record` checks one and returns it untouched (never
adding defaults: the canonical bytes of what the user sent are what gets hashed). It is a
hand-written validator because the merge validates tens of thousands of records per run; the
pydantic :class:`MemoryRecord` is the same contract written declaratively, the source of the JSON
Schema, and a test asserts both make the same accept/reject decision.

Error messages name fields and limits, never field values: a value may be a secret.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from acx.core.canonical import MAX_SAFE_INTEGER, child_path

ID_MAX_LENGTH = 128
ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
CODEBASE_FINGERPRINT_PATTERN = r"^cbf1_[0-9a-f]{40}$"
ARTIFACT_FINGERPRINT_PATTERN = r"^[0-9a-f]{10}$"
RFC3339_PATTERN = (
    r"^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)"
    r"(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
IMPACTS = ("positive", "neutral", "negative")
ORIGINS = ("native", "imported")
ZONES = ("rom", "save")

MSG_TRUE_NEEDS_NULL_CBF = "portable=true requires codebaseFingerprint=null"
MSG_TRUE_NEEDS_NULL_REPO = "portable=true requires repoId=null"
MSG_FALSE_NEEDS_CBF = "portable=false requires a codebaseFingerprint"
MSG_PORTABLE_MISSING = "portable is required and must be a boolean (true or false)"
MSG_PORTABLE_NOT_BOOL = "portable must be a boolean (true or false)"

_ID_RE = re.compile(ID_PATTERN)
_CBF_RE = re.compile(CODEBASE_FINGERPRINT_PATTERN)
_AFP_RE = re.compile(ARTIFACT_FINGERPRINT_PATTERN)
_TS_RE = re.compile(RFC3339_PATTERN.replace("(", "(?:"))  # no captures: only the verdict is used

REQUIRED_FIELDS = (
    "id",
    "title",
    "summary",
    "sourceType",
    "repoId",
    "repoLabel",
    "projectLabel",
    "timestamp",
    "impact",
    "xpAwarded",
    "tags",
    "portable",
)
OPTIONAL_FIELDS = (
    "codebaseFingerprint",
    "markdownPath",
    "artifactFingerprint",
    "zone",
    "foreign",
    "embeddingEngine",
    "origin",
    "importedFrom",
    "packageSlug",
    "similarity",
)
ALL_FIELDS = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)
_REQUIRED = frozenset(REQUIRED_FIELDS)
_OPTIONAL_CHECKED = tuple(name for name in OPTIONAL_FIELDS if name != "codebaseFingerprint")  # cbf: inline


class RecordError(ValueError):
    """A record that breaks the standard; ``path`` is a JSON path such as ``$.records[3].portable``."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(f"{path}: {message}")
        self.message = message
        self.path = path


def is_rfc3339(value: str) -> bool:
    """True for an RFC 3339 date-time (``T`` separator, ``Z`` or numeric offset, real calendar day)."""
    if _TS_RE.fullmatch(value) is None:
        return False
    # The match fixes the date's places: YYYY-MM-DD, two-digit fields compare as strings.
    day = value[8:10]
    if day <= "28":
        return True
    month = value[5:7]
    if month == "02":
        year = int(value[:4])
        return day <= ("29" if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else "28")
    return day <= ("30" if month in ("04", "06", "09", "11") else "31")


def _is_number(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return 0 <= value <= MAX_SAFE_INTEGER
    if kind is float:
        return value >= 0 and math.isfinite(value)
    return False


def _field_path(path: str, name: str) -> str:
    return child_path(path, name)


def _fail(path: str, name: str, message: str) -> RecordError:
    return RecordError(message, _field_path(path, name))


# Key orders (tuple(record)) that passed the key checks -> the optional fields to check, in check
# order. A bundle's records share a few key orders, so those checks run once per order, not per record.
_SHAPES: dict[tuple[Any, ...], tuple[str, ...]] = {}


def _optional_fields(obj: dict[Any, Any], path: str) -> tuple[str, ...]:
    """Raise on an unknown or missing field; else the optional fields ``obj`` holds (bar the cbf)."""
    shape = tuple(obj)
    known = _SHAPES.get(shape)
    if known is not None:
        return known
    keys = obj.keys()
    if not keys <= ALL_FIELDS:
        name = sorted(k for k in keys if k not in ALL_FIELDS)[0] if all(type(k) is str for k in keys) else ""
        raise _fail(path, name[:64], "unknown field (not part of the ACX memory record)")
    if not _REQUIRED <= keys:
        if "portable" not in keys:
            raise _fail(path, "portable", MSG_PORTABLE_MISSING)
        name = next(k for k in REQUIRED_FIELDS if k not in keys)
        raise _fail(path, name, "is required")
    known = tuple(name for name in _OPTIONAL_CHECKED if name in keys)
    if len(_SHAPES) >= 64:
        _SHAPES.clear()
    _SHAPES[shape] = known
    return known


def validate_record(obj: Any, path: str = "$") -> dict[str, Any]:
    """Return ``obj`` unchanged if it is a valid memory record, else raise :class:`RecordError`."""
    if type(obj) is not dict:
        raise RecordError("a memory record must be a JSON object", path)
    optional = _optional_fields(obj, path)
    get = obj.__getitem__
    portable = get("portable")
    if portable is not True and portable is not False:
        raise _fail(path, "portable", MSG_PORTABLE_NOT_BOOL)
    value = get("id")
    if type(value) is not str or _ID_RE.fullmatch(value) is None:
        if type(value) is str and value:
            raise _fail(path, "id", f"must be 1-{ID_MAX_LENGTH} characters of [A-Za-z0-9._:-]")
        raise _fail(path, "id", "must be a non-empty string")
    if (
        type(get("title")) is not str
        or type(get("summary")) is not str
        or type(get("sourceType")) is not str
        or type(get("repoLabel")) is not str
        or type(get("projectLabel")) is not str
    ):
        for name in ("title", "summary", "sourceType", "repoLabel", "projectLabel"):
            if type(get(name)) is not str:
                raise _fail(path, name, "must be a string")
    repo = get("repoId")
    if repo is not None and type(repo) is not str:
        raise _fail(path, "repoId", "must be a string or null")
    value = get("timestamp")
    if type(value) is not str or not is_rfc3339(value):
        raise _fail(path, "timestamp", "must be an RFC 3339 date-time string")
    if get("impact") not in IMPACTS or type(get("impact")) is not str:
        raise _fail(path, "impact", "must be one of positive, neutral, negative")
    if not _is_number(get("xpAwarded")):
        raise _fail(path, "xpAwarded", f"must be a finite number >= 0 (integers up to {MAX_SAFE_INTEGER})")
    tags = get("tags")
    if type(tags) is not list:
        raise _fail(path, "tags", "must be an array of strings")
    for index, tag in enumerate(tags):
        if type(tag) is not str:
            raise RecordError("must be a string", f"{_field_path(path, 'tags')}[{index}]")
    cbf = obj.get("codebaseFingerprint")
    if cbf is not None and (type(cbf) is not str or _CBF_RE.fullmatch(cbf) is None):
        raise _fail(path, "codebaseFingerprint", f"must match {CODEBASE_FINGERPRINT_PATTERN} or be null")
    if optional:
        _check_optional(obj, path, optional)
    if portable:
        if cbf is not None:
            raise _fail(path, "codebaseFingerprint", MSG_TRUE_NEEDS_NULL_CBF)
        if repo is not None:
            raise _fail(path, "repoId", MSG_TRUE_NEEDS_NULL_REPO)
        zone = "rom"
    else:
        if cbf is None:
            raise _fail(path, "codebaseFingerprint", MSG_FALSE_NEEDS_CBF)
        zone = "save"
    declared = obj.get("zone")
    if declared is not None and declared != zone:
        raise _fail(path, "zone", "must match the tier (rom for portable=true, save for portable=false)")
    return obj


def _check_optional(obj: dict[str, Any], path: str, names: tuple[str, ...]) -> None:
    for name in names:
        value = obj[name]
        if name in ("markdownPath", "embeddingEngine", "importedFrom", "packageSlug"):
            ok = value is None or type(value) is str
            message = "must be a string or null"
        elif name == "artifactFingerprint":
            ok = type(value) is str and _AFP_RE.fullmatch(value) is not None
            message = f"must match {ARTIFACT_FINGERPRINT_PATTERN}"
        elif name == "zone":
            ok = type(value) is str and value in ZONES
            message = "must be rom or save"
        elif name == "foreign":
            ok = type(value) is bool
            message = "must be a boolean"
        elif name == "origin":
            ok = type(value) is str and value in ORIGINS
            message = "must be native or imported"
        else:  # similarity
            ok = value is None or (type(value) in (int, float) and math.isfinite(value))
            ok = ok and not (type(value) is int and abs(value) > MAX_SAFE_INTEGER)
            message = "must be a finite number or null"
        if not ok:
            raise _fail(path, name, message)


def zone_for(portable: object) -> Literal["rom", "save"]:
    """THE zone rule: ROM for the transferable tier (``portable`` is exactly True), SAVE otherwise."""
    return "rom" if portable is True else "save"


def zone_of(record: dict[str, Any]) -> Literal["rom", "save"]:
    """The zone a (valid) record lives in: ROM for the transferable tier, SAVE for field-learned."""
    return zone_for(record.get("portable"))


# --- The declarative contract (JSON Schema source, and the reference the fast validator is tested
# against). pydantic's own messages are not used: validate_record owns the wording. The model is built
# on first use because importing pydantic costs more than a whole merge's validation (CLI start-up).


def _build_model() -> Any:  # imports inside: pydantic is kept off the import path (see above)
    from typing import Annotated

    from pydantic import (
        BaseModel,
        ConfigDict,
        Field,
        StrictBool,
        StrictFloat,
        StrictInt,
        StrictStr,
        model_validator,
    )

    _Number = (
        Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)]
        | Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]
    )
    _Signed = (
        Annotated[StrictInt, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
        | Annotated[StrictFloat, Field(allow_inf_nan=False)]
    )

    class MemoryRecord(BaseModel):
        """One ACX memory record, as a JSON object."""

        model_config = ConfigDict(extra="forbid", strict=True, title="AcxMemoryRecord")

        id: Annotated[StrictStr, Field(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH)]
        title: StrictStr
        summary: StrictStr
        sourceType: StrictStr
        repoId: StrictStr | None
        repoLabel: StrictStr
        projectLabel: StrictStr
        timestamp: Annotated[
            StrictStr, Field(pattern=RFC3339_PATTERN, json_schema_extra={"format": "date-time"})
        ]
        impact: Literal["positive", "neutral", "negative"]
        xpAwarded: _Number
        tags: list[StrictStr]
        portable: StrictBool
        codebaseFingerprint: Annotated[StrictStr, Field(pattern=CODEBASE_FINGERPRINT_PATTERN)] | None = None
        markdownPath: StrictStr | None = None
        # Optional but never null: typed without None so that JSON null is refused; the None default
        # only means "absent" and is never validated.
        artifactFingerprint: Annotated[StrictStr, Field(pattern=ARTIFACT_FINGERPRINT_PATTERN)] = None  # type: ignore[assignment]
        zone: Literal["rom", "save"] = None  # type: ignore[assignment]
        foreign: StrictBool = None  # type: ignore[assignment]
        embeddingEngine: StrictStr | None = None
        origin: Literal["native", "imported"] = None  # type: ignore[assignment]
        importedFrom: StrictStr | None = None
        packageSlug: StrictStr | None = None
        similarity: _Signed | None = None

        @model_validator(mode="before")
        @classmethod
        def _safe_integers(cls, data: Any) -> Any:
            # strict float also takes (and converts) an int, so the int bound alone does not hold
            if isinstance(data, dict):
                for name in ("xpAwarded", "similarity"):
                    number = data.get(name)
                    if type(number) is int and abs(number) > MAX_SAFE_INTEGER:
                        raise ValueError(f"{name}: integer outside +/-(2^53-1)")
            return data

        @model_validator(mode="after")
        def _tier_rules(self) -> MemoryRecord:
            if not is_rfc3339(self.timestamp):
                raise ValueError("timestamp must be an RFC 3339 date-time string")
            if self.portable:
                if self.codebaseFingerprint is not None:
                    raise ValueError(MSG_TRUE_NEEDS_NULL_CBF)
                if self.repoId is not None:
                    raise ValueError(MSG_TRUE_NEEDS_NULL_REPO)
            elif self.codebaseFingerprint is None:
                raise ValueError(MSG_FALSE_NEEDS_CBF)
            if self.zone is not None and self.zone != ("rom" if self.portable else "save"):
                raise ValueError("zone must match the tier")
            return self

    return MemoryRecord


def __getattr__(name: str) -> Any:
    if name == "MemoryRecord":
        model = _build_model()
        globals()["MemoryRecord"] = model
        return model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def model_accepts(obj: Any) -> bool:  # imports pydantic inside, as _build_model
    """Decision of the declarative model alone: the oracle validate_record is property-tested against
    (tests/unit/core/test_records.py); kept here beside the model it asks. Slower than validate_record."""
    from pydantic import ValidationError

    try:
        __getattr__("MemoryRecord").model_validate(obj)
    except ValidationError:
        return False
    return True


def record_json_schema() -> dict[str, Any]:
    """JSON Schema of one memory record: the source of the shipped ``acx/schemas/record.schema.json``
    (tests/unit/contract/test_cli_contract.py fails when the two differ)."""
    return __getattr__("MemoryRecord").model_json_schema()  # type: ignore[no-any-return]
