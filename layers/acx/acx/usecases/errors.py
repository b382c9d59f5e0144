"""The one error type use cases raise; handlers turn it into ``{"error": {code, message, path?}}``."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A refusal a client can act on. ``message`` never carries user content (secrets could ride in it)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        path: str | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.extra = extra or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.path:
            error["path"] = self.path
        return {"error": error, **self.extra}


def not_found(what: str = "package") -> ServiceError:
    # Another tenant's package and a package that does not exist answer the same (invariant 7).
    return ServiceError(404, "not_found", f"{what} not found")
