"""A local stand-in for the API Gateway HTTP API in front of the api function.

It turns each HTTP request into the payload-format-2.0 event AWS would send, authorizes it like the
HTTP API JWT authorizer (401 on protected routes without a valid token, 403 when a route's scope is
missing), enforces the 10 MB payload limit and shapes the handler's v2 response, so the same
``lambda_handler`` runs unchanged locally and in AWS. Its own refusals use the service's one error
shape ``{"error": {"code", "message"}}`` with what to do next (AWS's HTTP API answers
``{"message": ...}`` there and cannot be told otherwise; the CLI reads both).

``POST /local/token`` and ``GET /local/jwks.json`` exist only here (dev tokens for the CLI and tests).

One module: the route table read from template.yaml, the JWT authorizer stand-in,
the payload-2.0 event builder and the HTTP server are the one API Gateway behaviour the handler runs
under; each step reads the request state the one before it built.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from acx import contract as c
from acx.local.jwt_issuer import DevIssuer, InvalidToken, TokenExpired, scopes_of, stringify_claims

Handler = Callable[[dict[str, Any], Any], Any]


class ObjectFront(Protocol):
    """What the object path serves: the stack's buckets, its presigner, and the write that stores an
    object and queues its S3 event (:class:`acx.local.embedded.compose.Backend`)."""

    @property
    def buckets(self) -> Mapping[str, Any]: ...
    @property
    def presigner(self) -> Any: ...
    def put_object(self, bucket: str, key: str, chunks: Iterator[bytes]) -> tuple[str, int]: ...


#: API Gateway HTTP API request payload limit.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
#: Lambda synchronous invocation payload limit (the event, as JSON).
MAX_EVENT_BYTES = 6 * 1024 * 1024
ACCOUNT_ID = "123456789012"


@dataclass(frozen=True)
class Route:
    """One route of docs/API.md: ``method``, path ``template`` and the scope its authorizer requires."""

    method: str
    template: str
    scope: str | None  # None = public route, no authorizer

    @property
    def key(self) -> str:
        return f"{self.method} {self.template}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method:
            return None
        m = _compile(self.template).fullmatch(path)
        if m is None:
            return None
        return {k: unquote(v) for k, v in m.groupdict().items()}


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compile(template: str) -> re.Pattern[str]:
    pat = _PATTERNS.get(template)
    if pat is None:
        parts = re.split(r"(\{[A-Za-z0-9_]+\+?\})", template)
        rx = "".join(
            (f"(?P<{p[1:-2]}>.+)" if p.endswith("+}") else f"(?P<{p[1:-1]}>[^/]+)")  # {x+}: greedy, as AWS
            if p.startswith("{") and p.endswith("}")
            else re.escape(p)
            for p in parts
        )
        pat = _PATTERNS[template] = re.compile(rx)
    return pat


def routes_from_template(
    template_path: Path | None = None, scope_prefix: str | None = None
) -> tuple[Route, ...]:
    """The HTTP API routes and their scopes, read from template.yaml (the deployed API's definition),
    so the local gateway authorizes exactly what API Gateway would. Route scopes are
    ``!Sub "${ScopePrefix}<scope>"``: ``scope_prefix`` (default: the parameter's default) fills it."""
    from acx.local.resources import load_template

    path = template_path or Path(__file__).resolve().parents[4] / "template.yaml"
    template = load_template(path)
    if scope_prefix is None:
        scope_prefix = str(template.get("Parameters", {}).get("ScopePrefix", {}).get("Default", ""))

    def text(scope: Any) -> str:
        if isinstance(scope, dict) and "Fn::Sub" in scope:
            return str(scope["Fn::Sub"]).replace("${ScopePrefix}", scope_prefix)
        return str(scope)

    routes = []
    for resource in template["Resources"].values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            props = event["Properties"]
            if "Path" not in props:  # the $default catch-all (see has_default_route)
                continue
            auth = props.get("Auth") or {}
            scopes = [text(x) for x in auth.get("AuthorizationScopes") or []]
            public = auth.get("Authorizer") == "NONE"
            scope = None if public or not scopes else scopes[0]
            routes.append(Route(props["Method"].upper(), props["Path"], scope))
    return tuple(sorted(routes, key=lambda r: (r.template, r.method)))


ROUTES: tuple[Route, ...] = routes_from_template()

#: API Gateway's route key of the catch-all route.
DEFAULT_ROUTE_KEY = "$default"


def has_default_route(template_path: Path | None = None) -> bool:
    """Does template.yaml give the HTTP API a ``$default`` route (an HttpApi event with no Path and
    no Method, which SAM turns into one) behind the JWT authorizer? Then API Gateway hands every
    request no other route matches to the function, once the token is valid (no scope needed)."""
    from acx.local.resources import load_template

    path = template_path or Path(__file__).resolve().parents[4] / "template.yaml"
    for resource in load_template(path)["Resources"].values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            props = event.get("Properties") or {}
            if event.get("Type") == "HttpApi" and "Path" not in props and "Method" not in props:
                return (props.get("Auth") or {}).get("Authorizer") != "NONE"
    return False


CATCH_ALL: bool = has_default_route()


def match_route(
    method: str, path: str, routes: tuple[Route, ...] = ROUTES
) -> tuple[Route, dict[str, str]] | None:
    """The route a request hits and its path parameters, or None (AWS answers 404)."""
    for route in routes:
        params = route.match(method, path)
        if params is not None:
            return route, params
    return None


@dataclass
class LambdaContext:
    """The parts of the Lambda context object that handlers and powertools read."""

    function_name: str = "acx-api"
    memory_limit_in_mb: int = 512
    timeout_s: float = 30.0
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    region: str = "us-east-1"
    function_version: str = "$LATEST"
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/{self.aws_request_id}"

    def get_remaining_time_in_millis(self) -> int:
        """Time left before the (simulated) function timeout; powertools uses it for idempotency."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def build_event(
    *,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    route_key: str,
    path_parameters: Mapping[str, str] | None = None,
    claims: Mapping[str, Any] | None = None,
    scopes: list[str] | None = None,
    request_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API payload-format-2.0 event for one request."""
    ts = time.time() if now is None else now
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        lname = name.lower()
        if lname == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        merged[lname] = f"{merged[lname]},{value}" if lname in merged else value
    qs: dict[str, str] = {}
    for k, v in parse_qsl(raw_query, keep_blank_values=True):
        qs[k] = f"{qs[k]},{v}" if k in qs else v
    rid = request_id or str(uuid.uuid4())
    host = merged.get("host", "127.0.0.1")
    context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": "local",
        "domainName": host,
        "domainPrefix": host.split(".")[0],
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": merged.get("user-agent", ""),
        },
        "requestId": rid,
        "routeKey": route_key,
        "stage": "$default",
        "time": datetime.fromtimestamp(ts, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(ts * 1000),
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": stringify_claims(dict(claims)), "scopes": scopes}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": merged,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if qs:
        event["queryStringParameters"] = qs
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


def shape_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body bytes for a handler's v2 result (full form or the shorthand)."""
    if isinstance(result, dict) and "statusCode" in result:
        status = int(result["statusCode"])
        headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.extend((str(name), str(v)) for v in values)
        headers.extend(("Set-Cookie", str(c)) for c in result.get("cookies") or [])
        raw = result.get("body")
        if raw is None:
            body = b""
        elif result.get("isBase64Encoded"):
            body = base64.b64decode(raw)
        else:
            body = str(raw).encode("utf-8")
        if not any(k.lower() == "content-type" for k, _ in headers) and body:
            headers.append(("Content-Type", "text/plain; charset=utf-8"))
        return status, headers, body
    # Shorthand: the return value is valid JSON without a statusCode -> 200 application/json.
    return 200, [("Content-Type", "application/json")], json.dumps(result).encode("utf-8")


def _json(status: int, obj: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return status, [("Content-Type", "application/json")], json.dumps(obj).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    gateway: Gateway


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Every read and write on a connection times out: a client that announces more body than it
    # sends, or stops reading, ties up its thread for this long at most, never for good. A slow but
    # moving upload is not cut: the limit is per socket operation, not per request.
    timeout = 60.0

    def setup(self) -> None:
        # Per gateway (tests shorten it): StreamRequestHandler.setup reads ``self.timeout``.
        setattr(self, "timeout", self.server.gateway.read_timeout)  # noqa: B010 - a class variable in typeshed
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # quiet: Gateway writes its own access log
        return

    def _dispatch(self) -> None:
        started = time.monotonic()
        path = urlsplit(self.path).path
        if self.server.gateway.is_s3(path):
            self.server.gateway.serve_object(self, started)
            return
        try:
            status, headers, body = self.server.gateway.handle(self)
        except TimeoutError:  # the body stopped arriving (see ``timeout``)
            self.close_connection = True
            status, headers, body = _error(408, "request_timeout", "the request body did not arrive in time")
        except Exception:  # the gateway itself failed: AWS would answer 500 too
            self.server.gateway.log_exception()
            status, headers, body = _error(500, c.ERR_INTERNAL, "internal error")
        # Log before writing: a client that has its answer can rely on the line being there.
        ms = (time.monotonic() - started) * 1000
        self.server.gateway.access_log(self.command, path, status, ms)
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("apigw-requestid", getattr(self, "_request_id", ""))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _dispatch

    def __getattr__(self, name: str) -> Any:
        # any other method (TRACE, QUERY...) gets the gateway's JSON 404, not http.server's HTML 501
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)


class Gateway:
    """ThreadingHTTPServer on 127.0.0.1 that invokes ``handler`` like the HTTP API would."""

    def __init__(
        self,
        handler: Handler | None,
        issuer: DevIssuer,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        routes: tuple[Route, ...] = ROUTES,
        catch_all: bool = CATCH_ALL,
        enforce_scopes: bool = True,
        function_name: str = "acx-api",
        region: str = "us-east-1",
        log_stream: Any = None,
        objects: ObjectFront | None = None,
        read_timeout: float = 60.0,
    ) -> None:
        """``objects`` turns on the object path: ``/<bucket>/<key>`` for its buckets, served only for
        a valid presigned URL (see :meth:`serve_object`)."""
        self.handler = handler
        self.objects = objects
        self.read_timeout = read_timeout  # seconds per socket read or write (see _RequestHandler)
        self.issuer = issuer
        self.routes = routes
        self.catch_all = catch_all  # a $default route: unmatched requests go to the function
        self.enforce_scopes = enforce_scopes
        self.function_name = function_name
        self.region = region
        self._log = log_stream
        # One Lambda execution environment handles one event at a time, and powertools keeps the
        # current event in a class attribute: concurrent requests queue here as they would for one
        # environment (AWS scales out with more environments; the local stack has one).
        self._invoke_lock = threading.Lock()
        self._server = _Server((host, port), _RequestHandler)
        self._server.gateway = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Gateway:
        """Serve in a daemon thread; returns self so ``Gateway(...).start()`` reads well."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="acx-gateway", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- logging: method, path, status, time; never bodies, tokens or query strings
    def access_log(self, method: str, path: str, status: int, ms: float) -> None:
        print(f"{method} {path} {status} {ms:.1f}ms", file=self._log or sys.stderr, flush=True)

    def log_exception(self) -> None:
        """Traceback frames and the exception type only: a message could carry user content."""
        etype, _, tb = sys.exc_info()
        frames = "".join(traceback.format_tb(tb))
        name = etype.__name__ if etype else "Exception"
        print(f"handler error {name}\n{frames}", file=self._log or sys.stderr, flush=True)

    # -- the object path: presigned URLs only
    def is_s3(self, path: str) -> bool:
        """Whether ``path`` is a path-style request for one of the stack's buckets."""
        return self.objects is not None and path.lstrip("/").split("/", 1)[0] in self.objects.buckets

    def serve_object(self, req: _RequestHandler, started: float) -> None:
        """A presigned GET or PUT of one object; anything else is S3's 403, with nothing read or
        written: a bearer token, SigV4 headers or any other credential count for nothing here.

        What it does NOT stop: a holder of a valid URL using it until it expires (as on S3).
        """
        from acx.local.presigned import PresignRefused

        assert self.objects is not None
        parts = urlsplit(req.path)
        method = req.command.upper()
        headers = {k.lower(): v for k, v in req.headers.items()}
        try:
            bucket, key = self.objects.presigner.check(method, parts.path, parts.query, headers)
            if method not in ("GET", "PUT"):
                raise PresignRefused("AccessDenied", "Access Denied")
        except PresignRefused as refused:
            req.close_connection = True  # the body (if any) is never read
            self._send_object(
                req, method, parts.path, started, *_s3_error(403, refused.code, refused.message)
            )
            return
        if method == "PUT":
            try:
                version, _size = self.objects.put_object(bucket, key, _body_chunks(req))
            except TimeoutError:
                req.close_connection = True
                answer = _s3_error(408, "RequestTimeout", "the request body did not arrive in time")
                self._send_object(req, method, parts.path, started, *answer)
                return
            except _BadBody:
                req.close_connection = True
                answer = _s3_error(400, "IncompleteBody", "the body is shorter than its Content-Length")
                self._send_object(req, method, parts.path, started, *answer)
                return
            self._send_object(req, method, parts.path, started, 200, [("x-amz-version-id", version)], b"")
            return
        store = self.objects.buckets[bucket]
        size = store.size(key)
        if size is None:
            self._send_object(req, method, parts.path, started, *_s3_error(404, "NoSuchKey", "no such key"))
            return
        # Streamed (a cartridge can be large); the checksum is checked as it streams, and a mismatch
        # ends the connection before the announced length, so the client sees a short body.
        self.access_log(method, parts.path, 200, (time.monotonic() - started) * 1000)
        req.send_response(200)
        req.send_header("Content-Type", "application/octet-stream")
        req.send_header("Content-Length", str(size))
        req.end_headers()
        try:
            for chunk in store.chunks(key):
                req.wfile.write(chunk)
        except Exception:
            req.close_connection = True
            self.log_exception()

    def _send_object(
        self,
        req: _RequestHandler,
        method: str,
        path: str,
        started: float,
        status: int,
        headers: list[tuple[str, str]],
        payload: bytes,
    ) -> None:
        self.access_log(method, path, status, (time.monotonic() - started) * 1000)
        req.send_response(status)
        for name, value in headers:
            req.send_header(name, value)
        req.send_header("Content-Length", str(len(payload)))
        if req.close_connection:
            req.send_header("Connection", "close")
        req.end_headers()
        req.wfile.write(payload)

    # -- request handling
    def _read_body(self, req: _RequestHandler) -> bytes | None:
        """The request body, or None when it exceeds the payload limit."""
        te = (req.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks: list[bytes] = []
            total = 0
            while True:
                size = int(req.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while req.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_PAYLOAD_BYTES:
                    req.close_connection = True
                    return None
                chunks.append(req.rfile.read(size))
                req.rfile.readline()
            return b"".join(chunks)
        length = int(req.headers.get("Content-Length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            # Discard what the client sends (so it reads our 413 instead of a reset), within reason.
            if length <= 8 * MAX_PAYLOAD_BYTES:
                left = length
                while left > 0:
                    got = req.rfile.read(min(left, 1 << 20))
                    if not got:
                        break
                    left -= len(got)
            req.close_connection = True
            return None
        return req.rfile.read(length) if length > 0 else b""

    def handle(self, req: _RequestHandler) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request in, one (status, headers, body) out."""
        request_id = str(uuid.uuid4())
        req._request_id = request_id  # type: ignore[attr-defined]
        parts = urlsplit(req.path)
        raw_path, raw_query = parts.path or "/", parts.query
        body = self._read_body(req)
        if body is None:
            return _too_large()
        method = req.command.upper()
        if raw_path.startswith("/local/"):
            return self._local(method, raw_path, body)
        hit = match_route(method, raw_path, self.routes)
        if hit is None and not self.catch_all:
            return _error(404, c.ERR_NO_ROUTE, "no such route; GET /v1/openapi.json lists them")
        # No route matched and there is a $default route: authorized like the others, with no scope
        # (the function answers its own 404).
        route, params = hit if hit is not None else (None, {})
        claims: dict[str, Any] | None = None
        scopes: list[str] | None = None
        if route is None or route.scope is not None:
            auth = req.headers.get("Authorization") or ""
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return _error(401, c.ERR_UNAUTHORIZED, "no bearer token: run `acx login`")
            try:
                claims = self.issuer.verify(token.strip())
            except TokenExpired:
                return _error(401, c.ERR_TOKEN_EXPIRED, "the token has expired: run `acx login` again")
            except InvalidToken:
                return _error(
                    401, c.ERR_UNAUTHORIZED, "the token is not valid for this service: run `acx login`"
                )
            from acx.usecases.access import claim_names

            tenant_claim = claim_names().tenant_claim  # TENANT_CLAIM, as the handler reads it
            if not isinstance(claims.get(tenant_claim), str) or not isinstance(claims.get("sub", ""), str):
                # Stringified below (as AWS does), a boolean tenant would become "true": refuse it here.
                return _error(401, c.ERR_UNAUTHORIZED, "the token's tenant and sub claims must be strings")
            scopes = scopes_of(claims)
            if route is not None and self.enforce_scopes and route.scope not in (scopes or []):
                return _error(
                    403,
                    c.ERR_FORBIDDEN,
                    f"token lacks the scope {route.scope}: log in with it (`acx login --scopes ...`)",
                    extra={"scope": route.scope},
                )
        event = build_event(
            method=method,
            raw_path=raw_path,
            raw_query=raw_query,
            headers=list(req.headers.items()),
            body=body,
            source_ip=req.client_address[0],
            route_key=route.key if route is not None else DEFAULT_ROUTE_KEY,
            path_parameters=params,
            claims=claims,
            scopes=scopes,
            request_id=request_id,
        )
        if len(json.dumps(event)) > MAX_EVENT_BYTES:
            return _too_large()
        if self.handler is None:
            return _error(500, c.ERR_INTERNAL, "internal error")
        context = LambdaContext(function_name=self.function_name, region=self.region)
        try:
            with self._invoke_lock:
                result = self.handler(event, context)
        except Exception:
            self.log_exception()
            return _error(500, c.ERR_INTERNAL, "internal error")
        return shape_response(result)

    def _local(self, method: str, path: str, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        if method == "GET" and path == "/local/jwks.json":
            return _json(200, self.issuer.jwks())
        if method != "POST" or path != "/local/token":
            return _error(404, c.ERR_NO_ROUTE, "no such route")
        from acx.contract.models import RequestError, TokenRequest, parse_request

        try:
            doc = json.loads(body or b"{}")
        except ValueError:
            return _error(400, c.ERR_INVALID_JSON, "body is not JSON", "$")
        if not isinstance(doc, dict):
            return _error(400, c.ERR_INVALID_REQUEST, "body must be an object", "$")
        if isinstance(doc.get("scopes"), str):
            doc["scopes"] = doc["scopes"].split()
        try:
            req = parse_request(TokenRequest, doc)
        except RequestError as exc:
            return _error(400, exc.code, exc.message, exc.path)
        now = int(time.time())
        token = self.issuer.issue(req.tenant, req.scopes, sub=req.sub, ttl=req.ttl, now=now, agent=req.agent)
        expires = datetime.fromtimestamp(now + req.ttl, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return _json(
            200, {"token": token, "expiresAt": expires, "tenant": req.tenant, "scopes": list(req.scopes)}
        )


class _BadBody(Exception):
    """The client closed the connection before sending the body it announced."""


def _body_chunks(req: _RequestHandler, size: int = 1024 * 1024) -> Iterator[bytes]:
    """The request body (Content-Length or chunked) a chunk at a time, for the object path: no
    payload limit (S3 takes up to 5 GB in one PUT; the service enforces its own at ingest), bounded
    memory. A stalled body raises ``TimeoutError`` (the socket's read timeout), a short one
    :class:`_BadBody`."""
    if "chunked" in (req.headers.get("Transfer-Encoding") or "").lower():
        while True:
            n = int(req.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if n == 0:
                while req.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return
            left = n
            while left:
                got = req.rfile.read(min(left, size))
                if not got:
                    raise _BadBody
                left -= len(got)
                yield got
            req.rfile.readline()
    left = int(req.headers.get("Content-Length") or 0)
    while left > 0:
        got = req.rfile.read(min(left, size))
        if not got:
            raise _BadBody
        left -= len(got)
        yield got


def _s3_error(status: int, code: str, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """An S3-style XML error (what a client of a presigned URL reads from AWS)."""
    from xml.sax.saxutils import escape

    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error>"
    ).encode()
    return status, [("Content-Type", "application/xml")], body


def _too_large() -> tuple[int, list[tuple[str, str]], bytes]:
    return _error(
        413,
        c.ERR_BODY_TOO_LARGE,
        f"requests are limited to {c.GATEWAY_MAX_PAYLOAD} bytes; bundles over {c.MAX_INLINE_BYTES} bytes "
        "go through POST .../uploads (`acx upload` does it)",
    )


def _error(
    status: int, code: str, message: str, path: str | None = None, extra: dict[str, Any] | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The service's one error shape (``acx.contract.models.ErrorResponse``)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if path:
        error["path"] = path
    return _json(status, {"error": error, **(extra or {})})
