"""What IAM would say to each AWS call a function makes: the one table of actions per botocore
operation, a recorder of the calls, and an evaluator of template.yaml's role and key policies.

moto enforces no IAM, so tests/integration/test_permissions.py runs each function's code paths on
moto, records every botocore operation (and presigned URL) with the function that made it, turns
each into the IAM actions and resource ARNs AWS checks (``NEEDS`` below, from the service
authorization references), and asks whether the function's role from template.yaml allows it.

``NEEDS`` is the single place that says which action a call needs. An operation missing from it
fails the test (so a new adapter call cannot slip through unchecked). The model covers: Allow and
Deny statements, Action/Resource wildcards, identity policies (inline role policies and
AWS::IAM::Policy resources attached to the role), and KMS key policies (a key policy naming the role,
or the account root plus an ``ArnEquals aws:PrincipalArn`` condition, which delegates to IAM).
It models ``StringLike`` conditions on request keys (``s3:prefix`` of the list calls). It does NOT
model other conditions (a statement with any other condition never matches: the check
errs towards "denied"), SCPs, permission boundaries, or bucket/queue resource policies (the
template's are TLS-only Denies and service-principal Allows, which do not affect the functions).
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

ACCOUNT = "123456789012"
REGION = "us-east-1"


@dataclass(frozen=True)
class Need:
    """One IAM authorization AWS performs for a call: ``action`` on ``resource``."""

    action: str
    resource: str
    why: str = ""
    context: tuple[tuple[str, str], ...] = ()  # condition keys of the request (``s3:prefix``)


@dataclass(frozen=True)
class Call:
    function: str
    service: str
    operation: str
    params: dict[str, Any] = field(hash=False, compare=False)


# --------------------------------------------------------------------------- the world (names -> ARNs)


@dataclass
class World:
    """Physical names of the local stack and their ARNs, plus each store's encryption key."""

    tables: dict[str, str]  # table name -> ARN
    buckets: dict[str, str | None]  # bucket name -> default SSE-KMS key ARN (None: SSE-S3)
    queues: dict[str, tuple[str, str | None]]  # queue URL -> (ARN, KMS key ARN)
    topics: dict[str, str | None]  # topic ARN -> KMS key ARN
    keys: dict[str, str]  # key id, ARN or alias -> key ARN

    def table(self, name: str) -> str:
        return self.tables.get(name, f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}")

    def key(self, key_id: str) -> str:
        return self.keys.get(key_id, key_id)


# --------------------------------------------------------------------------- the table: operation -> needs


def _ddb_one(action: str) -> Callable[[dict[str, Any], World], list[Need]]:
    return lambda p, w: [Need(action, w.table(p["TableName"]))]


def _ddb_batch(action: str) -> Callable[[dict[str, Any], World], list[Need]]:
    return lambda p, w: [Need(action, w.table(t)) for t in p["RequestItems"]]


_TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def _ddb_transact_write(p: dict[str, Any], w: World) -> list[Need]:
    # DynamoDB authorizes each action of a transaction as its single-item API (developer guide,
    # "Using IAM with DynamoDB transactions"); there is no dynamodb:TransactWriteItems action.
    return [
        Need(f"dynamodb:{_TRANSACT[kind]}", w.table(op["TableName"]), "TransactWriteItems")
        for item in p["TransactItems"]
        for kind, op in item.items()
    ]


def _ddb_transact_get(p: dict[str, Any], w: World) -> list[Need]:
    return [
        Need("dynamodb:GetItem", w.table(i["Get"]["TableName"]), "TransactGetItems")
        for i in p["TransactItems"]
    ]


def _object(p: dict[str, Any]) -> str:
    return f"arn:aws:s3:::{p['Bucket']}/{p['Key']}"


def _sse_write(p: dict[str, Any], w: World, *, decrypt: bool = False) -> list[Need]:
    """S3 encrypts with the bucket's default KMS key as the caller: kms:GenerateDataKey (and
    kms:Decrypt for multipart uploads, S3 user guide "UsingKMSEncryption")."""
    key = w.buckets.get(p["Bucket"])
    if not key:
        return []
    needs = [Need("kms:GenerateDataKey", key, "SSE-KMS write")]
    return needs + ([Need("kms:Decrypt", key, "SSE-KMS multipart")] if decrypt else [])


def _sse_read(p: dict[str, Any], w: World) -> list[Need]:
    key = w.buckets.get(p["Bucket"])
    return [Need("kms:Decrypt", key, "SSE-KMS read")] if key else []


def _s3_get(p: dict[str, Any], w: World) -> list[Need]:
    action = "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject"
    return [Need(action, _object(p)), *_sse_read(p, w)]


def _s3_head(p: dict[str, Any], w: World) -> list[Need]:
    # HEAD needs s3:GetObject; without s3:ListBucket a missing key answers 403, not 404.
    return [
        Need("s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject", _object(p)),
        Need("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}", "404 for a missing key"),
    ]


def _s3_delete(p: dict[str, Any], w: World) -> list[Need]:
    return [Need("s3:DeleteObjectVersion" if p.get("VersionId") else "s3:DeleteObject", _object(p))]


def _s3_delete_many(p: dict[str, Any], w: World) -> list[Need]:
    # DeleteObjects is authorized per key: s3:DeleteObject, or s3:DeleteObjectVersion with a version.
    return [
        Need(
            "s3:DeleteObjectVersion" if o.get("VersionId") else "s3:DeleteObject",
            f"arn:aws:s3:::{p['Bucket']}/{o['Key']}",
            "DeleteObjects",
        )
        for o in p["Delete"]["Objects"]
    ]


def _queue(p: dict[str, Any], w: World) -> tuple[str, str | None]:
    return w.queues.get(p["QueueUrl"], (p["QueueUrl"], None))


def _sqs(action: str, *kms: str) -> Callable[[dict[str, Any], World], list[Need]]:
    """SQS with SSE-KMS: producers need kms:GenerateDataKey + kms:Decrypt, consumers kms:Decrypt
    (SQS developer guide, "Key management")."""

    def needs(p: dict[str, Any], w: World) -> list[Need]:
        arn, key = _queue(p, w)
        return [Need(action, arn)] + ([Need(k, key, "SSE-KMS queue") for k in kms] if key else [])

    return needs


def _sns_publish(p: dict[str, Any], w: World) -> list[Need]:
    key = w.topics.get(p["TopicArn"])
    extra = [Need(k, key, "SSE-KMS topic") for k in ("kms:GenerateDataKey", "kms:Decrypt")] if key else []
    return [Need("sns:Publish", p["TopicArn"]), *extra]


def _kms(action: str) -> Callable[[dict[str, Any], World], list[Need]]:
    return lambda p, w: [Need(action, w.key(p["KeyId"]))]


NEEDS: dict[tuple[str, str], Callable[[dict[str, Any], World], list[Need]]] = {
    # DynamoDB: table-level actions; no caller KMS permission (DynamoDB uses its own grant on the key).
    ("dynamodb", "GetItem"): _ddb_one("dynamodb:GetItem"),
    ("dynamodb", "PutItem"): _ddb_one("dynamodb:PutItem"),
    ("dynamodb", "UpdateItem"): _ddb_one("dynamodb:UpdateItem"),
    ("dynamodb", "DeleteItem"): _ddb_one("dynamodb:DeleteItem"),
    ("dynamodb", "Query"): _ddb_one("dynamodb:Query"),
    ("dynamodb", "Scan"): _ddb_one("dynamodb:Scan"),
    ("dynamodb", "BatchGetItem"): _ddb_batch("dynamodb:BatchGetItem"),
    ("dynamodb", "BatchWriteItem"): _ddb_batch("dynamodb:BatchWriteItem"),
    ("dynamodb", "TransactWriteItems"): _ddb_transact_write,
    ("dynamodb", "TransactGetItems"): _ddb_transact_get,
    # S3 (service authorization reference: the multipart operations are authorized as s3:PutObject).
    ("s3", "PutObject"): lambda p, w: [Need("s3:PutObject", _object(p)), *_sse_write(p, w)],
    ("s3", "CreateMultipartUpload"): lambda p, w: (
        [Need("s3:PutObject", _object(p)), *_sse_write(p, w, decrypt=True)]
    ),
    ("s3", "UploadPart"): lambda p, w: [Need("s3:PutObject", _object(p)), *_sse_write(p, w, decrypt=True)],
    ("s3", "CompleteMultipartUpload"): lambda p, w: (
        [Need("s3:PutObject", _object(p)), *_sse_write(p, w, decrypt=True)]
    ),
    ("s3", "AbortMultipartUpload"): lambda p, w: [Need("s3:AbortMultipartUpload", _object(p))],
    ("s3", "GetObject"): _s3_get,
    ("s3", "HeadObject"): _s3_head,
    ("s3", "DeleteObject"): _s3_delete,
    ("s3", "DeleteObjects"): _s3_delete_many,
    ("s3", "ListObjectsV2"): lambda p, w: [
        Need("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}", context=(("s3:prefix", p.get("Prefix", "")),))
    ],
    ("s3", "ListObjectVersions"): lambda p, w: [
        Need(
            "s3:ListBucketVersions",
            f"arn:aws:s3:::{p['Bucket']}",
            context=(("s3:prefix", p.get("Prefix", "")),),
        )
    ],
    # Bedrock runtime (the optional Titan embedding engine of the search indexes)
    ("bedrock-runtime", "InvokeModel"): lambda p, w: [
        Need("bedrock:InvokeModel", f"arn:aws:bedrock:{REGION}::foundation-model/{p['modelId']}")
    ],
    # KMS
    ("kms", "Sign"): _kms("kms:Sign"),
    ("kms", "Verify"): _kms("kms:Verify"),
    ("kms", "GetPublicKey"): _kms("kms:GetPublicKey"),
    ("kms", "DescribeKey"): _kms("kms:DescribeKey"),
    ("kms", "GenerateMac"): _kms("kms:GenerateMac"),
    # SQS (ReceiveMessage etc. are what Lambda's event source mapping does with the function's role)
    ("sqs", "SendMessage"): _sqs("sqs:SendMessage", "kms:GenerateDataKey", "kms:Decrypt"),
    ("sqs", "ReceiveMessage"): _sqs("sqs:ReceiveMessage", "kms:Decrypt"),
    ("sqs", "DeleteMessage"): _sqs("sqs:DeleteMessage"),
    ("sqs", "ChangeMessageVisibility"): _sqs("sqs:ChangeMessageVisibility"),
    ("sqs", "GetQueueAttributes"): _sqs("sqs:GetQueueAttributes"),
    # SNS
    ("sns", "Publish"): _sns_publish,
}

# A presigned URL carries the signer's authority: the role needs the action when the URL is used.
PRESIGNED = {"put_object": "PutObject", "get_object": "GetObject"}


def needs_of(call: Call, world: World) -> list[Need]:
    """The IAM authorizations of one recorded call; KeyError names an operation missing from NEEDS."""
    try:
        rule = NEEDS[(call.service, call.operation)]
    except KeyError:
        raise KeyError(
            f"{call.service}:{call.operation} is not in iam_model.NEEDS: add what it needs"
        ) from None
    return rule(call.params, world)


# --------------------------------------------------------------------------- the recorder


class Recorder:
    """Every botocore call (and presigned URL) made while a function is marked as running."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._function: list[str] = []
        self._lock = threading.Lock()

    @contextmanager
    def running(self, function: str) -> Iterator[None]:
        """Attribute the calls made inside (from any thread) to ``function``; calls outside (the
        test's own setup and assertions, the client's PUT to a presigned URL) are not recorded."""
        self._function.append(function)
        try:
            yield
        finally:
            self._function.pop()

    def _record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        if self._function:
            with self._lock:
                self.calls.append(Call(self._function[-1], service, operation, dict(params)))

    @contextmanager
    def installed(self) -> Iterator[Recorder]:
        from unittest import mock

        import botocore.client
        import botocore.signers

        original_call = botocore.client.BaseClient._make_api_call
        original_presign = botocore.signers.generate_presigned_url
        recorder = self

        def make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            recorder._record(client.meta.service_model.service_name, operation_name, api_params)
            return original_call(client, operation_name, api_params)

        def presign(client: Any, ClientMethod: str, Params: Any = None, **kwargs: Any) -> Any:
            operation = PRESIGNED.get(ClientMethod, ClientMethod)
            recorder._record(client.meta.service_model.service_name, operation, dict(Params or {}))
            return original_presign(client, ClientMethod, Params=Params, **kwargs)

        with (
            mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call),
            mock.patch.object(botocore.signers, "generate_presigned_url", presign),
        ):
            yield self


def presigned_target(url: str) -> tuple[str, str]:
    """(bucket, key) of a path-style presigned S3 URL."""
    path = unquote(urlparse(url).path).lstrip("/")
    bucket, _, key = path.partition("/")
    return bucket, key


# --------------------------------------------------------------------------- the evaluator


def _as_list(value: Any) -> list[Any]:
    """A statement list; a statement that resolved to AWS::NoValue (an ``!If`` off) is dropped, as
    CloudFormation drops it."""
    return [v for v in (value if isinstance(value, list) else [value]) if v is not None]


def _matches(patterns: Any, value: str, *, case: bool) -> bool:
    for pattern in _as_list(patterns):
        p, v = (str(pattern), value) if case else (str(pattern).lower(), value.lower())
        if fnmatch.fnmatchcase(v, p.replace("[", "[[]")):
            return True
    return False


def _statement_matches(
    st: dict[str, Any],
    action: str,
    resource: str,
    principal_arn: str,
    context: tuple[tuple[str, str], ...] = (),
) -> bool:
    if "NotAction" in st or "NotResource" in st:
        return False  # not used by the template; never assume it grants
    if not _matches(st.get("Action", []), action, case=False):
        return False
    if not _matches(st.get("Resource", []), resource, case=True):
        return False
    condition = st.get("Condition")
    if condition and set(condition) == {"StringLike"}:
        # StringLike on request keys (``s3:prefix``): every key must be in the request and match
        # one of its patterns (IAM: a key absent from the request makes the condition false).
        values = dict(context)
        return all(
            key in values and _matches(patterns, values[key], case=True)
            for key, patterns in condition["StringLike"].items()
        )
    if condition:
        named = condition.get("ArnEquals", {}).get("aws:PrincipalArn") if len(condition) == 1 else None
        if named is None or len(condition["ArnEquals"]) != 1:
            return False  # an unmodelled condition: err towards "denied"
        return principal_arn in _as_list(named)
    return True


@dataclass
class Policies:
    """Resolved identity policies per role ARN and key policies per key ARN."""

    identity: dict[str, list[dict[str, Any]]]  # role ARN -> statements
    key_policies: dict[str, list[dict[str, Any]]]  # key ARN -> statements
    account_root: str = f"arn:aws:iam::{ACCOUNT}:root"

    def _identity_decision(
        self, role: str, action: str, resource: str, context: tuple[tuple[str, str], ...] = ()
    ) -> bool:
        statements = self.identity.get(role, [])
        if any(
            s.get("Effect") == "Deny" and _statement_matches(s, action, resource, role, context)
            for s in statements
        ):
            return False
        return any(
            s.get("Effect") == "Allow" and _statement_matches(s, action, resource, role, context)
            for s in statements
        )

    def allowed(self, role: str, need: Need) -> bool:
        """IAM's answer for ``role`` (same account) doing ``need``."""
        key_policy = self.key_policies.get(need.resource) if need.action.startswith("kms:") else None
        if key_policy is None:
            return self._identity_decision(role, need.action, need.resource, need.context)
        # KMS: the key policy must allow the role itself, or allow the account (then IAM decides).
        direct = delegated = False
        for st in key_policy:
            principals = st.get("Principal", {})
            aws = _as_list(principals.get("AWS", [])) if isinstance(principals, dict) else [principals]
            if not _statement_matches({**st, "Resource": "*"}, need.action, "*", role):
                continue
            if st.get("Effect") == "Deny" and (role in aws or self.account_root in aws or "*" in aws):
                return False
            if st.get("Effect") == "Allow":
                direct = direct or role in aws
                delegated = delegated or self.account_root in aws
        return direct or (delegated and self._identity_decision(role, need.action, need.resource))


def role_policies(
    template: dict[str, Any], resolve: Callable[[Any], Any], role_arns: dict[str, str]
) -> Policies:
    """Resolve every role's statements (inline + AWS::IAM::Policy naming it) and every key policy."""
    resources = template["Resources"]
    identity: dict[str, list[dict[str, Any]]] = {arn: [] for arn in role_arns.values()}
    for logical, arn in role_arns.items():
        for policy in resources[logical]["Properties"].get("Policies", []):
            identity[arn] += _as_list(resolve(policy["PolicyDocument"])["Statement"])
    for res in resources.values():
        if res.get("Type") in ("AWS::IAM::Policy", "AWS::IAM::RolePolicy"):
            props = res["Properties"]
            targets = props.get("Roles") or [props.get("RoleName")]
            for target in targets:
                logical = target.get("Ref") if isinstance(target, dict) else None
                if logical in role_arns:
                    identity[role_arns[logical]] += _as_list(resolve(props["PolicyDocument"])["Statement"])
    keys: dict[str, list[dict[str, Any]]] = {}
    for logical, res in resources.items():
        if res.get("Type") == "AWS::KMS::Key":
            keys[resolve({"Fn::GetAtt": [logical, "Arn"]})] = _as_list(
                resolve(res["Properties"]["KeyPolicy"])["Statement"]
            )
    return Policies(identity, keys)
