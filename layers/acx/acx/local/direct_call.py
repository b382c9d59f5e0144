"""DynamoDB calls to the in-process moto answered at botocore's ``before-call``, without the HTTP leg.

py-spy of a 20,000-record presigned ingest on the local stack (docs/LOCAL.md): after the request
was serialised, botocore still spent about a tenth of the ingest thread on the way to moto and back
for requests that never leave the process: building and preparing an ``AWSRequest``, SigV4 signing
(moto checks no signature), endpoint and retry bookkeeping, ``before-send`` dispatch.
``before-call`` is botocore's documented place to answer a call (its own ``Stubber`` answers there):
the request dict is already validated and serialised, so the body moto receives, and the journal
holds, is byte for byte what the HTTP path sends. The answer is parsed by botocore's own JSON parser,
with its second pass for modelled error fields (``CancellationReasons``, a failed condition's
``Item``), so the parsed answer and the ``ClientError`` a caller sees are the HTTP path's
(tests/integration/test_moto_direct_call.py pins them equal on answers and refusals).

What is not the HTTP path's: no SigV4 signature (the ``Authorization`` header carries only the
credential scope moto reads its account and region from), no botocore retries (moto answers no
throttling or 5xx to retry), and no ``before-send``/``needs-retry``/``response-received`` events
for these calls. Local stack only: installed on its boto3 session for moto's address; anything else
(another address, a non-JSON protocol, a streaming body) goes on to botocore's usual path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

HANDLER_ID = "acx-local-direct-dynamodb"
_EVENT = "before-call.dynamodb"

Answer = Callable[[list[tuple[str, str]], bytes], tuple[int, dict[str, str], bytes]]


class DirectDynamoDB:
    """botocore ``before-call.dynamodb`` hook: the serialised request to ``answer`` (moto, journaled),
    the answer parsed as botocore parses an HTTP one."""

    def __init__(self, answer: Answer, prefix: str) -> None:
        self.answer = answer
        self.prefix = prefix

    def __call__(self, model: Any, params: dict[str, Any], request_signer: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse
        from botocore.endpoint import convert_to_response_dict
        from botocore.parsers import create_parser
        from moto.core.botocore_stubber import MockRawResponse

        url = str(params.get("url") or "")
        body = params.get("body")
        if isinstance(body, str):
            body = body.encode("utf-8")
        if (
            not url.startswith(self.prefix)
            or not isinstance(body, bytes)
            or params.get("method") != "POST"
            or model.service_model.resolved_protocol != "json"
            or model.has_streaming_output
        ):
            return None
        credentials = request_signer._credentials
        if credentials is None:
            return None
        access_key = credentials.get_frozen_credentials().access_key
        scope = f"{access_key}/{time.strftime('%Y%m%d', time.gmtime())}/{request_signer.region_name}/dynamodb"
        headers = [(str(k).lower(), str(v)) for k, v in params["headers"].items()]
        headers.append(("authorization", f"AWS4-HMAC-SHA256 Credential={scope}/aws4_request"))
        headers.append(("host", url.split("/", 3)[2]))
        status, head, payload = self.answer(headers, body)
        http = AWSResponse(url, status, head, MockRawResponse(payload))
        response = convert_to_response_dict(http, model)
        parser = create_parser("json")
        parsed = parser.parse(response, model.output_shape)
        if status >= 300:
            _add_modeled_error_fields(response, parsed, model, parser)
        metadata = parsed.get("ResponseMetadata")
        if isinstance(metadata, dict):
            metadata["RetryAttempts"] = 0
        return http, parsed


def _add_modeled_error_fields(response: Any, parsed: dict[str, Any], model: Any, parser: Any) -> None:
    """``Endpoint._add_modeled_error_fields`` (botocore 1.44): the error's own members, such as a
    cancelled transaction's ``CancellationReasons``."""
    code = parsed.get("Error", {}).get("Code")
    if code is None:
        return
    shape = model.service_model.shape_for_error_code(code)
    if shape is None:
        return
    parsed.update(parser.parse(response, shape))


def install(events: Any, hook: DirectDynamoDB) -> None:
    """DynamoDB clients of the session owning ``events`` created from now on answer through ``hook``."""
    events.register(_EVENT, hook, unique_id=HANDLER_ID)


def uninstall(events: Any) -> None:
    events.unregister(_EVENT, unique_id=HANDLER_ID)
