"""template.yaml through the SAM translator (what `sam deploy` sends), then created in moto's CloudFormation.

What this proves: the SAM transform accepts the template (as CloudFormation will on `sam deploy`), and
every resource type moto's CloudFormation implements is created from the transformed template with
the properties the code relies on (runtime, architecture, tables, queues, the event source mappings).
What it cannot prove: the resource types moto does not implement (HTTP API, alarms, bucket and queue
policies) are only checked for being in the transformed template, and moto does not enforce IAM.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from typing import Any

import boto3
import pytest
from moto import mock_aws

from acx.local.resources import load_template
from tests.conftest import ROOT

pytest.importorskip("samtranslator")

PARAMETERS = {"JwtIssuer": "https://issuer.example.com", "JwtAudience": "acx"}
ARTIFACTS = "acx-sam-artifacts"
# moto leaves these without a physical id in the stack summary (they are created: see the last test).
NO_PHYSICAL_ID = {"AWS::Lambda::Permission", "AWS::Lambda::LayerVersion"}


def _package(node: Any, keys: set[str]) -> None:
    """What `sam package` does to local code paths: point them at S3 objects."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("CodeUri", "ContentUri") and isinstance(value, str) and "://" not in value:
                s3_key = value.strip("/") + ".zip"
                node[key] = f"s3://{ARTIFACTS}/{s3_key}"
                keys.add(s3_key)
            else:
                _package(value, keys)
    elif isinstance(node, list):
        for item in node:
            _package(item, keys)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from moto.cloudformation.parsing import get_model_map
    from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
    from samtranslator.translator.transform import transform

    template = load_template(ROOT / "template.yaml")
    keys: set[str] = set()
    _package(template, keys)
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        transformed = transform(template, dict(PARAMETERS), ManagedPolicyLoader(session.client("iam")))
        s3 = session.client("s3")
        s3.create_bucket(Bucket=ARTIFACTS)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("app.py", "def lambda_handler(event, context):\n    return {}\n")
        for key in keys:
            s3.put_object(Bucket=ARTIFACTS, Key=key, Body=buf.getvalue())
        cfn = session.client("cloudformation")
        cfn.create_stack(
            StackName="acx-memory",
            TemplateBody=json.dumps(transformed),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in PARAMETERS.items()],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        for _ in range(50):
            status = cfn.describe_stacks(StackName="acx-memory")["Stacks"][0]["StackStatus"]
            if not status.endswith("IN_PROGRESS"):
                break
            time.sleep(0.1)
        summaries = [
            r
            for page in cfn.get_paginator("list_stack_resources").paginate(StackName="acx-memory")
            for r in page["StackResourceSummaries"]
        ]
        yield {
            "session": session,
            "status": status,
            "transformed": transformed,
            "resources": {r["LogicalResourceId"]: r for r in summaries},
            "supported": set(get_model_map()),
        }


def test_sam_transform_produces_plain_cloudformation(stack: dict[str, Any]) -> None:
    transformed = stack["transformed"]
    assert "Transform" not in transformed
    types = {r["Type"] for r in transformed["Resources"].values()}
    assert not any(t.startswith("AWS::Serverless::") for t in types)
    assert {"AWS::Lambda::Function", "AWS::ApiGatewayV2::Api", "AWS::DynamoDB::Table"} <= types


def test_every_resource_moto_supports_is_created(stack: dict[str, Any]) -> None:
    assert stack["status"] == "CREATE_COMPLETE"
    supported = {
        logical: spec["Type"]
        for logical, spec in stack["transformed"]["Resources"].items()
        if spec["Type"] in stack["supported"]
    }
    assert len(supported) >= 40
    for logical, type_ in supported.items():
        got = stack["resources"].get(logical)
        assert got is not None, f"{logical} ({type_}) was not created"
        assert got["ResourceStatus"] == "CREATE_COMPLETE" and got["ResourceType"] == type_, got
        if type_ not in NO_PHYSICAL_ID:
            assert got.get("PhysicalResourceId"), logical


def test_created_resources_have_what_the_code_relies_on(stack: dict[str, Any]) -> None:
    session = stack["session"]
    template = load_template(ROOT / "template.yaml")
    declared = template["Resources"]
    physical = {k: v["PhysicalResourceId"] for k, v in stack["resources"].items()}
    tables = set(session.client("dynamodb").list_tables()["TableNames"])
    for logical, spec in declared.items():
        if spec["Type"] == "AWS::DynamoDB::Table":
            assert physical[logical] in tables, logical
    functions = {f["FunctionName"]: f for f in session.client("lambda").list_functions()["Functions"]}
    serverless = [k for k, v in declared.items() if v["Type"] == "AWS::Serverless::Function"]
    assert len(serverless) == 4
    for logical in serverless:
        fn = functions[physical[logical]]
        assert fn["Runtime"] == "python3.12", fn
        # moto's CloudFormation drops Architectures and Layers; the transformed template must carry them.
        props = stack["transformed"]["Resources"][logical]["Properties"]
        assert props["Architectures"] == ["arm64"] and props["Runtime"] == "python3.12"
        layers = [{"Ref": next(k for k in physical if k.startswith("AcxLayer"))}]
        if logical == "ApiFunction":  # SAM appends the function's own SearchLayer (numpy) to the Globals'
            layers.append({"Ref": next(k for k in physical if k.startswith("SearchLayer"))})
        assert props["Layers"] == layers
    mappings = session.client("lambda").list_event_source_mappings()["EventSourceMappings"]
    queues = session.client("sqs").list_queues()["QueueUrls"]
    assert len(mappings) == 2 and len(queues) >= 4
    buckets = {b["Name"] for b in session.client("s3").list_buckets()["Buckets"]}
    for logical, spec in declared.items():
        if spec["Type"] == "AWS::S3::Bucket":
            assert physical[logical] in buckets, logical
