"""Each function's code paths, run on moto, need only what its role in template.yaml grants.

moto enforces no IAM. So every botocore call (and presigned URL) each handler makes while these
scenarios run is recorded, turned into the IAM actions and ARNs AWS would check
(tests/integration/iam_model.py, NEEDS: the one table of what each call needs) and evaluated
against the function's role policies and the KMS key policies from template.yaml, resolved to the
moto resources. A call the role does not allow fails here, as it would fail on AWS; a statement no
recorded call needs fails too (a grant nobody proves is a grant nobody checks).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from acx.local.resources import load_template
from tests.integration.iam_model import (
    ACCOUNT,
    REGION,
    Call,
    Policies,
    Recorder,
    World,
    needs_of,
    role_policies,
)
from tests.integration.service import ROOT, Context, Service, bundle, record

PKG = "perm"
PREFIX = "acx-local"
# Statements the Lambda service itself uses with the role (not calls the code makes).
RUNTIME_STATEMENTS = {"OwnLogGroup", "XRayHasNoResourceLevelPermissions"}
#: The scenarios run with the optional Bedrock engine configured (its grants are ``!If`` statements,
#: dropped by CloudFormation under the default local-hash-128), answered by ``_fake_titan``: the only
#: difference from the default is that InvokeModel is called, so every grant is exercised.
SEARCH_ENGINE = "bedrock:amazon.titan-embed-text-v2:0"
#: Grants that no scenario drives (each needs a reason here; none left).
NOT_YET_EXERCISED: set[str] = set()


def _fake_titan(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
    """Bedrock's InvokeModel answered in botocore's before-call hook (as botocore's Stubber does), so
    the call is still made and recorded: a deterministic 256-dimension vector of the input text."""
    import io

    from botocore.awsrequest import AWSResponse
    from botocore.response import StreamingBody

    from acx.core.embedding import embed

    request = json.loads(params["body"])
    vector = embed(request["inputText"]) + [0.0] * (request["dimensions"] - 128)
    vector[-1] = 0.01  # never all zeros
    body = json.dumps({"embedding": vector, "inputTextTokenCount": 1}).encode()
    http = AWSResponse("https://bedrock-runtime.invalid", 200, {}, None)
    return http, {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


@dataclass
class Recorded:
    template: dict[str, Any]
    resolve: Any
    roles: dict[str, str]  # function short name -> role logical id
    role_arns: dict[str, str]  # role logical id -> ARN
    world: World
    calls: list[Call]

    def policies(self, template: dict[str, Any] | None = None) -> Policies:
        return role_policies(template or self.template, self.resolve, self.role_arns)

    def problems(self, template: dict[str, Any] | None = None) -> list[str]:
        policies = self.policies(template)
        found: set[str] = set()
        for call in self.calls:
            role = self.role_arns[self.roles[call.function]]
            for need in needs_of(call, self.world):
                if not policies.allowed(role, need):
                    why = f" ({need.why})" if need.why else ""
                    found.add(
                        f"{call.function}: {call.operation} needs {need.action} on {need.resource}{why}"
                    )
        return sorted(found)


def _function_roles(template: dict[str, Any]) -> dict[str, str]:
    out = {}
    for res in template["Resources"].values():
        if res.get("Type") == "AWS::Serverless::Function":
            props = res["Properties"]
            out[props["CodeUri"].strip("/").split("/")[-1]] = props["Role"]["Fn::GetAtt"][0]
    return out


def _world(creator: Any, template: dict[str, Any]) -> World:
    resources = template["Resources"]
    tables, buckets, queues, topics, keys = {}, {}, {}, {}, {}
    for logical, phys in creator.physical.items():
        kind = resources[logical]["Type"]
        props = resources[logical].get("Properties", {})
        if kind == "AWS::DynamoDB::Table":
            tables[phys["ref"]] = phys["Arn"]
        elif kind == "AWS::S3::Bucket":
            rules = creator.resolve(props.get("BucketEncryption", {})).get(
                "ServerSideEncryptionConfiguration", []
            )
            default = rules[0]["ServerSideEncryptionByDefault"] if rules else {}
            buckets[phys["ref"]] = (
                default.get("KMSMasterKeyID") if default.get("SSEAlgorithm") == "aws:kms" else None
            )
        elif kind == "AWS::SQS::Queue":
            queues[phys["QueueUrl"]] = (phys["Arn"], creator.resolve(props.get("KmsMasterKeyId")))
        elif kind == "AWS::SNS::Topic":
            topics[phys["TopicArn"]] = creator.resolve(props.get("KmsMasterKeyId"))
        elif kind == "AWS::KMS::Key":
            keys[phys["KeyId"]] = keys[phys["Arn"]] = phys["Arn"]
    return World(tables, buckets, queues, topics, keys)


def _add_unmodelled(creator: Any, template: dict[str, Any]) -> dict[str, str]:
    """Give the resources the local stack does not create (roles, log groups) the ARNs AWS would."""
    role_arns = {}
    for logical, res in template["Resources"].items():
        if res.get("Type") == "AWS::IAM::Role":
            arn = f"arn:aws:iam::{ACCOUNT}:role/{PREFIX}-{logical}"
            creator.physical[logical] = {"ref": f"{PREFIX}-{logical}", "Arn": arn, "RoleId": logical}
            role_arns[logical] = arn
        elif res.get("Type") == "AWS::Logs::LogGroup":
            name = creator.resolve(res["Properties"]["LogGroupName"])
            arn = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"
            creator.physical[logical] = {"ref": name, "Arn": arn}
    return role_arns


# --------------------------------------------------------------------------- the scenarios


def _scenarios(svc: Service, rec: Recorder, env: dict[str, str]) -> None:
    """Every route and handler path the functions have, each under the function that runs it.

    Each invocation starts cold (adapters, clients and cached keys dropped): in one process the
    functions would otherwise share what another fetched (the signer's public key, ...), hiding
    calls that each function, in its own Lambda process, makes itself.
    """
    from acx.usecases.deps import reset

    @contextmanager
    def cold(function: str) -> Iterator[None]:
        reset()
        with rec.running(function):
            yield

    def api(method: str, path: str, expect: int | tuple[int, ...], **kw: Any) -> Any:
        with cold("api"):
            status, body = svc.call(method, path, **kw)
        assert status in ((expect,) if isinstance(expect, int) else expect), (method, path, status, body)
        return body

    def pump(queue: str, function: str) -> None:
        with cold(function):
            svc.pump(queue, function)

    base = f"/v1/packages/{PKG}"
    api("GET", "/v1/health", 200, tenant=None)
    api("GET", "/v1/openapi.json", 200, tenant=None)
    files = {"knowledge": [{"path": "knowledge/retries.md", "content": "# Retries\nBack off.\n"}]}
    api("POST", f"{base}/bundles", 201, body={**bundle([record(1), record(2)]), **files})
    api("POST", f"{base}/bundles", 201, body=bundle([record(3)]), headers={"Idempotency-Key": "k-1"})
    api("POST", f"{base}/bundles", 201, body=bundle([record(3)]), headers={"Idempotency-Key": "k-1"})
    api("GET", "/v1/trust-registry", 200, tenant=None)
    api("GET", f"{base}/memories", 200)
    log = api("GET", f"{base}/log", 200)
    api("GET", f"{base}/log/verify", 200)
    api("GET", f"{base}/log/proof/inclusion", 200, query={"index": "0", "size": str(log["size"])})
    api("GET", f"{base}/log/proof/consistency", 200, query={"from": "1", "to": str(log["size"])})

    # Presigned upload -> S3 -> SQS -> ingest (accepted), and one refused by the scrub gate.
    for i, summary in ((4, "Back off with jitter."), (5, "token ghp_" + "A1b2C3d4" * 5)):
        up = api("POST", f"{base}/uploads", 201, body={})
        svc.put_upload(up["uploadId"], json.dumps(bundle([record(i, summary=summary)])).encode(), package=PKG)
        pump("INGEST_QUEUE_URL", "ingest")
        api("GET", f"{base}/uploads/{up['uploadId']}", 200)

    # Search at the api function, cold (the index read from S3: manifest and segments), with the
    # query embedded by Bedrock (the fake answers; the call is recorded).
    from acx.usecases import search as search_uc

    search_uc.CACHE.views.clear()
    search_uc.CACHE.segments.clear()
    found = api("GET", f"{base}/memories/search", 200, query={"q": "back off with jitter"})
    assert found["engine"] == f"{SEARCH_ENGINE}:256" and found["results"], found

    # Review: the policy (admin), candidates, the queue (its near-belief search), an approval and a
    # rejection (the forget path), by a reviewer who is not the candidates' author.
    reviewer: dict[str, Any] = {"scopes": ["memory:review", "memory:read"], "claims": {"sub": "reviewer-1"}}
    api("PUT", f"{base}/policy", 200, body={"review": "required"})
    candidates = [
        record(7, title="Drain the queue before deploys", summary="In-flight jobs were lost on restart."),
        record(8, title="Rotate the canary host weekly", summary="A stale canary hid a regression."),
    ]
    api("POST", f"{base}/bundles", 201, body=bundle(candidates))
    assert [i["id"] for i in api("GET", f"{base}/review", 200, **reviewer)["items"]] == [
        "mem-0007",
        "mem-0008",
    ]
    api("POST", f"{base}/review/mem-0007", 200, body={"decision": "approve"}, **reviewer)
    api("POST", f"{base}/review/mem-0008", 200, body={"decision": "reject"}, **reviewer)
    api("PUT", f"{base}/policy", 200, body={"review": "none"})

    # An ingest whose record is forgotten between its commit and its index hook: the hook's state
    # check sees the tombstone and rewrites the segment without it, purging every version (the path
    # that needs ListSearchIndexVersions in IngestRole).
    original_indexed = search_uc.SearchIndexer.indexed

    def forget_before_indexing(
        indexer: Any, tenant: str, package: str, records: list, *a: Any, **k: Any
    ) -> None:
        api("DELETE", f"{base}/memories/{records[0]['id']}", 200)
        original_indexed(indexer, tenant, package, records, *a, **k)

    up = api("POST", f"{base}/uploads", 201, body={})
    svc.put_upload(up["uploadId"], json.dumps(bundle([record(6, title="Raced")])).encode(), package=PKG)
    search_uc.SearchIndexer.indexed = forget_before_indexing  # type: ignore[method-assign,assignment]
    try:
        pump("INGEST_QUEUE_URL", "ingest")
    finally:
        search_uc.SearchIndexer.indexed = original_indexed  # type: ignore[method-assign]
    assert api("GET", f"{base}/uploads/{up['uploadId']}", 200)["status"] == "ingested"
    assert ("ingest", "s3", "ListObjectVersions") in {(c.function, c.service, c.operation) for c in rec.calls}

    # Exports: synchronous (+ download URL), asynchronous through the export queue.
    exported = api("POST", f"{base}/cartridges", 201, body={})
    api("GET", f"{base}/cartridges/{exported['cartridgeId']}", 200)
    queued = api("POST", f"{base}/cartridges", 202, body={"async": True})
    pump("EXPORT_QUEUE_URL", "export")
    api("GET", f"{base}/cartridges/{queued['cartridgeId']}", 200)

    # A forget lands while an asynchronous export is uploading: the export function purges the
    # object it just stored (every version), the path that needs ListBucketVersions in ExportRole.
    raced = api("POST", f"{base}/cartridges", 202, body={"async": True})
    from acx.adapters.objects import ObjectStore

    original = ObjectStore.upload_file

    def upload_after_a_forget(store: ObjectStore, key: str, path: str, content_type: str = "") -> None:
        api("DELETE", f"{base}/memories/mem-0001", 200)
        original(store, key, path, content_type)

    ObjectStore.upload_file = upload_after_a_forget  # type: ignore[method-assign]
    try:
        pump("EXPORT_QUEUE_URL", "export")
    finally:
        ObjectStore.upload_file = original  # type: ignore[method-assign]
    api("GET", f"{base}/cartridges/{raced['cartridgeId']}", 410)
    s3 = boto3.client("s3", region_name=REGION)
    left = s3.list_object_versions(
        Bucket=env["CARTRIDGES_BUCKET"], Prefix=f"cartridges/acme/{PKG}/{raced['cartridgeId']}"
    )
    assert not left.get("Versions") and not left.get("DeleteMarkers"), left

    ddb = boto3.client("dynamodb", region_name=REGION)
    row = ddb.get_item(
        TableName=env["RECORDS_TABLE"],
        Key={"pk": {"S": _row_pk(f"acme#{PKG}", "mem-0002")}, "sk": {"S": "r#mem-0002"}},
    )
    api(
        "DELETE", f"{base}/memories", 200, query={"contentHash": bytes(row["Item"]["contentHash"]["B"]).hex()}
    )
    api("POST", f"{base}/lock", 200, body={"reason": "audit"})
    api("POST", f"{base}/unlock", 200, body={})

    # Enough small uploads that the package's index has more segments than the scheduled run lets
    # stand: the verify function compacts it (reads, merges, writes one segment, purges the rest).
    manifest_key = f"indexes/acme/{PKG}/manifest.json"

    def segments() -> int:
        body = s3.get_object(Bucket=env["DATA_BUCKET"], Key=manifest_key)["Body"].read()
        return len(json.loads(body)["segments"])

    i = 20
    while segments() <= search_uc.COMPACT_AT:
        words = " ".join(f"w{i}x{j}" for j in range(12))  # unlike any forgotten memory's text
        api("POST", f"{base}/bundles", 201, body=bundle([record(i, title=f"note {i}", summary=words)]))
        i += 1

    # Scheduled verification: one package verifies, a tampered one fails and publishes the alarm.
    api("POST", "/v1/packages/perm-bad/bundles", 201, body=bundle([record(9)]))
    ddb.update_item(
        TableName=env["RECORDS_TABLE"],
        Key={"pk": {"S": _row_pk("acme#perm-bad", "mem-0009")}, "sk": {"S": "r#mem-0009"}},
        UpdateExpression="SET contentHash = :h",
        ExpressionAttributeValues={":h": {"B": b"\x01" * 32}},
    )
    event = json.loads((ROOT / "events" / "schedule-verify.json").read_text())
    with cold("verify"):
        verified = svc.verify.lambda_handler(copy.deepcopy(event), Context())
    assert verified["failed"] == 1, verified
    assert segments() == 1


@pytest.fixture(scope="module")
def recorded() -> Iterator[Recorded]:
    from acx.usecases.deps import reset
    from tests.integration.moto_ed25519 import ed25519_kms
    from tests.integration.moto_resources import Creator

    template = load_template(ROOT / "template.yaml")
    saved = dict(os.environ)
    rec = Recorder()
    with rec.installed(), mock_aws(), ed25519_kms():
        session = boto3.Session(region_name=REGION)
        clients = {
            s: session.client(s, config=Config(signature_version="s3v4") if s == "s3" else None)
            for s in ("dynamodb", "s3", "sqs", "kms", "sns")
        }
        boto3.DEFAULT_SESSION = None  # a session of its own, so the fake hook goes with this test
        boto3.setup_default_session(region_name=REGION)
        boto3._get_default_session().events.register(
            "before-call.bedrock-runtime.InvokeModel", _fake_titan, unique_id="acx-fake-titan"
        )
        creator = Creator(
            template,
            clients,
            account=ACCOUNT,
            region=REGION,
            prefix=PREFIX,
            parameters={"SearchEngine": SEARCH_ENGINE},
        )
        creator.create_all()
        env = creator.environment()
        os.environ.update(env)
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
        reset()
        try:
            _scenarios(Service(env), rec, env)
            role_arns = _add_unmodelled(creator, template)
            yield Recorded(
                template,
                creator.resolve,
                _function_roles(template),
                role_arns,
                _world(creator, template),
                rec.calls,
            )
        finally:
            reset()
            boto3.DEFAULT_SESSION = None
            from acx.usecases import search as search_uc

            search_uc._ENGINES.clear()
            search_uc.CACHE.views.clear()
            search_uc.CACHE.segments.clear()
            os.environ.clear()
            os.environ.update(saved)


# --------------------------------------------------------------------------- the checks


def test_every_function_ran_its_paths(recorded: Recorded) -> None:
    ops = {(c.function, c.service, c.operation) for c in recorded.calls}
    assert {f for f, _, _ in ops} == set(recorded.roles) == {"api", "ingest", "export", "verify"}
    for expected in (
        ("api", "s3", "PutObject"),  # the presigned upload URL
        ("api", "sqs", "SendMessage"),
        ("api", "kms", "Sign"),
        ("api", "dynamodb", "TransactWriteItems"),
        ("ingest", "sqs", "ReceiveMessage"),
        ("ingest", "s3", "DeleteObject"),
        ("export", "s3", "ListObjectVersions"),
        ("export", "s3", "DeleteObjects"),
        ("verify", "sns", "Publish"),
    ):
        assert expected in ops, expected


def test_every_call_each_function_makes_is_allowed_by_its_own_role(recorded: Recorded) -> None:
    assert recorded.problems() == []


def test_every_statement_of_a_role_is_needed_by_some_call(recorded: Recorded) -> None:
    """Removing any one statement (identity or key policy) makes a recorded call fail: no grant is
    unproven, and the check is shown to notice each missing permission."""
    unneeded = []
    for path, sid in _statements(recorded.template):
        if sid in RUNTIME_STATEMENTS:
            continue
        broken = copy.deepcopy(recorded.template)
        _remove(broken, path)
        if not recorded.problems(broken) and f"{path[0]}:{sid}" not in NOT_YET_EXERCISED:
            unneeded.append(f"{path[0]}:{sid}")
    assert unneeded == [], unneeded


def test_export_role_without_the_purge_grants_fails_naming_the_actions(recorded: Recorded) -> None:
    """The gap the issue found (ExportRole could not purge a revoked cartridge) is caught."""
    for sid, expected in (
        ("ListCartridgeVersions", "export: ListObjectVersions needs s3:ListBucketVersions"),
        ("PurgeRevokedCartridge", "export: DeleteObjects needs s3:DeleteObjectVersion"),
    ):
        broken = copy.deepcopy(recorded.template)
        (path,) = [p for p, s in _statements(broken) if p[0] == "ExportRole" and s == sid]
        _remove(broken, path)
        problems = recorded.problems(broken)
        assert any(p.startswith(expected) for p in problems), (sid, problems)


def test_only_the_key_policy_and_iam_together_let_a_role_sign(recorded: Recorded) -> None:
    """Drop the condition naming the roles: the root statement would let any IAM grant sign; drop
    the IAM grant: the key policy alone does not let the role sign."""
    key = recorded.template["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"]
    sign_index = next(i for i, st in enumerate(key) if st.get("Sid") == "SigningFunctionsSign")
    broken = copy.deepcopy(recorded.template)
    broken["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"][sign_index]["Condition"] = {
        "ArnEquals": {"aws:PrincipalArn": "arn:aws:iam::123456789012:role/someone-else"}
    }
    assert any("kms:Sign" in p for p in recorded.problems(broken))
    broken = copy.deepcopy(recorded.template)
    broken["Resources"].pop("SigningKeyUse")
    assert any(p.startswith("api: Sign needs kms:Sign") for p in recorded.problems(broken))


def _statements(template: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    for logical, res in template["Resources"].items():
        if res.get("Type") == "AWS::IAM::Role":
            for p, policy in enumerate(res["Properties"].get("Policies", [])):
                for s, st in enumerate(policy["PolicyDocument"]["Statement"]):
                    out.append(((logical, "Policies", p, s), st.get("Sid", str(s))))
        elif res.get("Type") == "AWS::IAM::Policy":
            for s, st in enumerate(res["Properties"]["PolicyDocument"]["Statement"]):
                out.append(((logical, "Policy", s), st.get("Sid", str(s))))
        elif res.get("Type") == "AWS::KMS::Key":
            for s, st in enumerate(res["Properties"]["KeyPolicy"]["Statement"]):
                if st.get("Sid", "").startswith("Account"):
                    continue  # administration, not used by the functions
                principal = st.get("Principal", {})
                if isinstance(principal, dict) and "Service" in principal:
                    continue  # AWS services' grants (S3 notifications, alarms, logs)
                out.append(((logical, "KeyPolicy", s), st.get("Sid", str(s))))
    return out


def _remove(template: dict[str, Any], path: tuple[Any, ...]) -> None:
    props = template["Resources"][path[0]]["Properties"]
    if path[1] == "Policies":
        del props["Policies"][path[2]]["PolicyDocument"]["Statement"][path[3]]
    elif path[1] == "Policy":
        del props["PolicyDocument"]["Statement"][path[2]]
    else:
        del props["KeyPolicy"]["Statement"][path[2]]


def _row_pk(pk: str, record_id: str) -> str:
    """The partition key of a new package's row (its row shard: acx.adapters.log_rows)."""
    from acx.adapters.log_rows import DEFAULT_ROW_SHARDS, shard_of, shard_pk

    return shard_pk(pk, shard_of(record_id, DEFAULT_ROW_SHARDS))


def test_search_grants_are_each_needed_and_the_prefix_condition_is_checked(recorded: Recorded) -> None:
    """Without its Bedrock statement a role cannot embed; without ListSearchIndexVersions the ingest
    and verify functions cannot purge index segments; and that grant's ``s3:prefix`` condition lets
    them list versions under indexes/ only."""
    from tests.integration.iam_model import Need

    for role, sid, expected in (
        ("ApiRole", "5", "api: InvokeModel needs bedrock:InvokeModel"),
        ("IngestRole", "5", "ingest: InvokeModel needs bedrock:InvokeModel"),
        ("IngestRole", "ListSearchIndexVersions", "ingest: ListObjectVersions needs s3:ListBucketVersions"),
        ("VerifyRole", "ListSearchIndexVersions", "verify: ListObjectVersions needs s3:ListBucketVersions"),
    ):
        broken = copy.deepcopy(recorded.template)
        (path,) = [p for p, s in _statements(broken) if p[0] == role and s == sid]
        _remove(broken, path)
        assert any(p.startswith(expected) for p in recorded.problems(broken)), (role, sid)
    policies = recorded.policies()
    ingest = recorded.role_arns["IngestRole"]
    bucket = next(b for b in recorded.world.buckets if "data" in b)
    for prefix, allowed in (("indexes/acme/perm/seg-", True), ("bundles/acme/perm/", False), ("", False)):
        need = Need("s3:ListBucketVersions", f"arn:aws:s3:::{bucket}", context=(("s3:prefix", prefix),))
        assert policies.allowed(ingest, need) is allowed, prefix


def test_the_bedrock_grant_is_the_configured_models_arn_only(recorded: Recorded) -> None:
    """bedrock:InvokeModel on the deployment's model in its region, nothing else; each engine the
    template offers resolves the grant to its own model's ARN."""
    from tests.integration.iam_model import Need
    from tests.integration.moto_resources import Creator

    policies, models = recorded.policies(), f"arn:aws:bedrock:{REGION}::foundation-model/"
    titan = models + SEARCH_ENGINE.removeprefix("bedrock:")
    for role in ("ApiRole", "IngestRole"):
        arn = recorded.role_arns[role]
        assert policies.allowed(arn, Need("bedrock:InvokeModel", titan)), role
        for other in (
            models + "cohere.embed-english-v3",
            models + "anthropic.claude-v2",
            titan.replace(REGION, "eu-west-1"),
        ):
            assert not policies.allowed(arn, Need("bedrock:InvokeModel", other)), (role, other)
    assert not policies.allowed(recorded.role_arns["VerifyRole"], Need("bedrock:InvokeModel", titan))
    grants = {
        json.dumps(st["Fn::If"][1]["Resource"])
        for role in ("ApiRole", "IngestRole")
        for policy in recorded.template["Resources"][role]["Properties"]["Policies"]
        for st in policy["PolicyDocument"]["Statement"]
        if "Fn::If" in st and st["Fn::If"][0] == "UseBedrockEmbeddings"
    }
    (grant,) = grants
    for engine in recorded.template["Parameters"]["SearchEngine"]["AllowedValues"][1:]:
        creator = Creator(
            recorded.template,
            {},
            account=ACCOUNT,
            region=REGION,
            prefix=PREFIX,
            parameters={"SearchEngine": engine},
        )
        assert creator.resolve(json.loads(grant)) == models + engine.removeprefix("bedrock:")
