"""The OpenAPI document, completed from the contract: every route's statuses, bodies and errors.

powertools generates the paths and parameters from the handler's annotations; this adds what the
handler reads itself (request bodies, validated with the same models) and replaces each operation's
responses with :data:`acx.contract.models.ROUTES`, so that a generated client or a fuzzer
(schemathesis, ``make test``) can rely on every status code and body the route can answer.
"""

from __future__ import annotations

from typing import Any

from acx.contract import MAX_IDEMPOTENCY_KEY
from acx.contract.models import ROUTES, STATUS_TEXT, ErrorResponse, RouteSpec

_REF = "#/components/schemas/{model}"


def _schema(model: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    """A $ref to ``model``'s schema, its definitions merged into components."""
    doc = model.model_json_schema(ref_template=_REF, by_alias=True)
    schemas.update(doc.pop("$defs", {}))
    name = model.__name__
    schemas[name] = doc
    return {"$ref": _REF.format(model=name)}


def _responses(route: RouteSpec, schemas: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for status, model in route.ok:
        schema = _schema(model, schemas)
        out[str(status)] = {
            "description": STATUS_TEXT.get(status, "OK"),
            "content": {media: {"schema": schema} for media in route.media},
        }
    error = {"application/json": {"schema": _schema(ErrorResponse, schemas)}}
    for status in route.errors:
        entry: dict[str, Any] = {"description": STATUS_TEXT.get(status, "Error"), "content": error}
        if status == 503:
            entry["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
        out[str(status)] = entry
    return out


def _drop_null_defaults(schemas: dict[str, Any]) -> None:
    # pydantic's "absent" default (null) is not a valid example value of a non-nullable field
    for model in schemas.values():
        for prop in model.get("properties", {}).values():
            if "default" in prop and prop["default"] is None:
                del prop["default"]


def complete(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (powertools' output) with bodies and responses from the contract."""
    from acx.core.bundle import BundleModel  # lazy: a module __getattr__ that builds the pydantic model

    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name in [n for n in schemas if n in ("HTTPValidationError", "ValidationError")]:
        del schemas[name]
    bundle = BundleModel.model_json_schema(ref_template=_REF)
    schemas.update(bundle.pop("$defs", {}))
    schemas["AcxMemoryBundle"] = bundle
    paths = document.get("paths", {})
    _fold_greedy_paths(paths)
    for route in ROUTES:
        operation = paths.get(route.path, {}).get(route.method.lower())
        if operation is None:
            raise LookupError(f"route {route.key} of the contract is not served by the handler")
        operation["responses"] = _responses(route, schemas)
        if route.scope is None:
            operation["security"] = []
        else:
            operation["x-acx-scope"] = route.scope
        if route.body is not None:
            operation["requestBody"] = {
                "required": False,
                "content": {"application/json": {"schema": _schema(route.body, schemas)}},
            }
        elif route.body_ref is not None:
            operation.setdefault("parameters", []).append(
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "description": "a retry with the same key and body returns the first answer",
                    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY},
                }
            )
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": _REF.format(model=route.body_ref)}}},
            }
    declared = {r.key for r in ROUTES}
    for path, item in paths.items():
        for method in item:
            if f"{method.upper()} {path}" not in declared:
                raise LookupError(f"route {method.upper()} {path} is served but not in the contract")
    _drop_null_defaults(schemas)
    return document


def _fold_greedy_paths(paths: dict[str, Any]) -> None:
    """The handler serves a greedy ``{path+}`` route (API Gateway's form) as one route per depth
    (``/files/{a}``, ``/files/{a}/{b}``...): document them as the one contract route."""
    for route in ROUTES:
        if not route.path.endswith("+}") or route.path in paths:
            continue
        cut = route.path.rindex("{")
        prefix, name = route.path[:cut], route.path[cut + 1 : -1]
        served = sorted(p for p in paths if p.startswith(prefix))
        if not served:
            continue
        item = paths.pop(served[0])
        for extra in served[1:]:
            paths.pop(extra)
        for operation in item.values():
            params = [
                q for q in operation.get("parameters", []) if q.get("in") != "path" or q.get("name") == "pkg"
            ]
            params.append(
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "description": "the file's path (slashes as they are, or URL-encoded)",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 1024},
                }
            )
            operation["parameters"] = params
        paths[route.path] = item
