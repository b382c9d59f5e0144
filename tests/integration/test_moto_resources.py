"""tests/integration/moto_resources.py: what it creates in moto matches template.yaml, and uploads/
reaches SQS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import boto3
import pytest
from moto import mock_aws

from acx.local.resources import TemplateError, create_tables_named, load_template
from tests.integration.moto_ed25519 import ed25519_kms
from tests.integration.moto_resources import (
    create_from_template,
    env_var_for,
    local_name,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
P256 = {"SigningKeySpec": "ECC_NIST_P256"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def of_type(template: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


@pytest.fixture
def stack() -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        env = create_from_template(TEMPLATE, session, region=REGION, parameters=P256)
        clients = {s: session.client(s) for s in ("dynamodb", "s3", "sqs", "kms", "sns")}
        yield env, clients


def receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)


def test_environment_names_every_global_variable_and_every_queue(stack, template) -> None:
    env, _ = stack
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert set(globals_env) <= set(env)
    for queue_id in of_type(template, "AWS::SQS::Queue"):
        assert f"{env_var_for(queue_id)}_URL" in env
    # The names the local pumps rely on.
    for name in ("INGEST_QUEUE_URL", "INGEST_DLQ_URL", "EXPORT_QUEUE_URL", "EXPORT_DLQ_URL"):
        assert env[name].startswith("http")
    assert env["UPLOAD_URL_TTL"] == str(template["Parameters"]["UploadUrlTtl"]["Default"])
    assert env["POWERTOOLS_SERVICE_NAME"] == globals_env["POWERTOOLS_SERVICE_NAME"]


def test_tables_match_the_template(stack, template) -> None:
    env, clients = stack
    ddb = clients["dynamodb"]
    tables = of_type(template, "AWS::DynamoDB::Table")
    assert {"RecordsTable", "ReceiptsTable", "HeadsTable", "JobsTable", "IdempotencyTable"} <= set(tables)
    data_key_arn = clients["kms"].describe_key(KeyId="alias/acx-local-data")["KeyMetadata"]["Arn"]
    for logical_id, resource in tables.items():
        props = resource["Properties"]
        name = local_name("acx-local", logical_id)
        desc = ddb.describe_table(TableName=name)["Table"]
        assert desc["KeySchema"] == props["KeySchema"]
        assert sorted(desc["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
            props["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        )
        assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert desc["SSEDescription"]["SSEType"] == "KMS"
        assert desc["SSEDescription"]["KMSMasterKeyArn"] == data_key_arn
        backups = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
        ttl = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if "TimeToLiveSpecification" in props:
            assert ttl["TimeToLiveStatus"] == "ENABLED"
            assert ttl["AttributeName"] == props["TimeToLiveSpecification"]["AttributeName"]
        else:
            assert ttl["TimeToLiveStatus"] == "DISABLED"
    assert env["IDEMPOTENCY_TABLE"] == local_name("acx-local", "IdempotencyTable")
    idem = ddb.describe_time_to_live(TableName=env["IDEMPOTENCY_TABLE"])["TimeToLiveDescription"]
    assert idem["AttributeName"] == "expiration"


def test_buckets_match_the_template(stack, template) -> None:
    env, clients = stack
    s3 = clients["s3"]
    data_key_arn = clients["kms"].describe_key(KeyId="alias/acx-local-data")["KeyMetadata"]["Arn"]
    for logical_id, resource in of_type(template, "AWS::S3::Bucket").items():
        props = resource["Properties"]
        name = local_name("acx-local", logical_id)
        versioning = s3.get_bucket_versioning(Bucket=name).get("Status")
        assert versioning == props.get("VersioningConfiguration", {}).get("Status")
        block = s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"]
        assert all(block.values()) and len(block) == 4
        rule = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"][0]
        default = rule["ApplyServerSideEncryptionByDefault"]
        want = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ]
        assert default["SSEAlgorithm"] == want["SSEAlgorithm"]
        if want["SSEAlgorithm"] == "aws:kms":
            assert default["KMSMasterKeyID"] == data_key_arn
    assert s3.get_bucket_versioning(Bucket=env["DATA_BUCKET"])["Status"] == "Enabled"
    assert s3.get_bucket_versioning(Bucket=env["CARTRIDGES_BUCKET"])["Status"] == "Enabled"
    lifecycle = s3.get_bucket_lifecycle_configuration(Bucket=env["UPLOADS_BUCKET"])["Rules"]
    expiring = [r for r in lifecycle if r.get("Expiration")]
    assert [(r["Filter"]["Prefix"], r["Expiration"]["Days"]) for r in expiring] == [("uploads/", 1)]


def test_uploads_notification_targets_the_ingest_queue(stack) -> None:
    env, clients = stack
    sqs = clients["sqs"]
    ingest_arn = sqs.get_queue_attributes(QueueUrl=env["INGEST_QUEUE_URL"], AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    config = clients["s3"].get_bucket_notification_configuration(Bucket=env["UPLOADS_BUCKET"])
    (queue_config,) = config["QueueConfigurations"]
    assert queue_config["QueueArn"] == ingest_arn
    assert queue_config["Events"] == ["s3:ObjectCreated:*"]
    assert queue_config["Filter"]["Key"]["FilterRules"] == [{"Name": "Prefix", "Value": "uploads/"}] or (
        queue_config["Filter"]["Key"]["FilterRules"] == [{"Name": "prefix", "Value": "uploads/"}]
    )
    # No notification on the other buckets.
    for bucket in (env["DATA_BUCKET"], env["CARTRIDGES_BUCKET"]):
        assert (
            not clients["s3"].get_bucket_notification_configuration(Bucket=bucket).get("QueueConfigurations")
        )


def test_queues_have_their_dlq_redrive_and_timeouts(stack, template) -> None:
    env, clients = stack
    sqs = clients["sqs"]
    for queue, dlq in (("IngestQueue", "IngestDLQ"), ("ExportQueue", "ExportDLQ")):
        props = template["Resources"][queue]["Properties"]
        url = env[f"{env_var_for(queue)}_URL"]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        dlq_arn = sqs.get_queue_attributes(
            QueueUrl=env[f"{env_var_for(dlq)}_URL"], AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        redrive = json.loads(attrs["RedrivePolicy"])
        assert redrive["deadLetterTargetArn"] == dlq_arn
        assert int(redrive["maxReceiveCount"]) == props["RedrivePolicy"]["maxReceiveCount"] == 3
        assert attrs["VisibilityTimeout"] == str(props["VisibilityTimeout"])
        assert attrs["KmsMasterKeyId"].startswith("arn:aws:kms:")


def test_keys_and_topic(stack, template) -> None:
    env, clients = stack
    kms = clients["kms"]
    signing = kms.describe_key(KeyId=env["SIGNING_KEY_ID"])["KeyMetadata"]
    assert signing["KeySpec"] == "ECC_NIST_P256"
    assert signing["KeyUsage"] == "SIGN_VERIFY"
    assert kms.describe_key(KeyId="alias/acx-local-signing")["KeyMetadata"]["KeyId"] == env["SIGNING_KEY_ID"]
    data = kms.describe_key(KeyId="alias/acx-local-data")["KeyMetadata"]
    assert data["KeyUsage"] == "ENCRYPT_DECRYPT"
    assert kms.get_key_rotation_status(KeyId=data["KeyId"])["KeyRotationEnabled"] is True
    topics = [t["TopicArn"] for t in clients["sns"].list_topics()["Topics"]]
    assert env["ALARM_TOPIC_ARN"] in topics
    attrs = clients["sns"].get_topic_attributes(TopicArn=env["ALARM_TOPIC_ARN"])["Attributes"]
    assert attrs.get("KmsMasterKeyId") == data["Arn"]


def test_object_under_uploads_produces_one_sqs_message(stack) -> None:
    env, clients = stack
    s3, sqs = clients["s3"], clients["sqs"]
    assert receive_all(sqs, env["INGEST_QUEUE_URL"]) == []  # the S3 test event was drained
    s3.put_object(Bucket=env["UPLOADS_BUCKET"], Key="not-uploads/t1/pkg/x.json", Body=b"{}")
    s3.put_object(Bucket=env["UPLOADS_BUCKET"], Key="uploads/t1/pkg/u-1.json", Body=b'{"records":[]}')
    messages = receive_all(sqs, env["INGEST_QUEUE_URL"])
    assert len(messages) == 1
    (record,) = json.loads(messages[0]["Body"])["Records"]
    assert record["eventName"].startswith("ObjectCreated:")
    assert record["s3"]["bucket"]["name"] == env["UPLOADS_BUCKET"]
    # Keys arrive URL-encoded (moto also encodes "/"), as the ingest handler expects.
    assert unquote_plus(record["s3"]["object"]["key"]) == "uploads/t1/pkg/u-1.json"


def test_unknown_parameter_override_is_refused() -> None:
    with mock_aws(), pytest.raises(TemplateError, match="NoSuchParameter"):
        create_from_template(TEMPLATE, boto3.Session(region_name=REGION), parameters={"NoSuchParameter": "x"})


def test_disallowed_parameter_value_is_refused() -> None:
    with mock_aws(), pytest.raises(TemplateError, match="SigningKeySpec"):
        create_from_template(
            TEMPLATE, boto3.Session(region_name=REGION), parameters={"SigningKeySpec": "RSA_2048"}
        )


def test_default_signing_key_is_ed25519() -> None:
    with mock_aws(), ed25519_kms():
        session = boto3.Session(region_name=REGION)
        env = create_from_template(TEMPLATE, session, region=REGION)
        meta = session.client("kms").describe_key(KeyId=env["SIGNING_KEY_ID"])["KeyMetadata"]
        assert meta["KeySpec"] == "ECC_NIST_EDWARDS25519"


def test_works_against_a_threaded_moto_server() -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        session = boto3.Session(region_name=REGION)
        clients = {
            s: session.client(s, endpoint_url=endpoint) for s in ("dynamodb", "s3", "sqs", "kms", "sns")
        }
        env = create_from_template(TEMPLATE, clients, region=REGION, prefix="acx-srv", parameters=P256)
        assert env["RECORDS_TABLE"] == "acx-srv-records-table"
        assert "AWS_ENDPOINT_URL" not in env
        clients["s3"].put_object(Bucket=env["UPLOADS_BUCKET"], Key="uploads/t/p/u.json", Body=b"{}")
        messages = receive_all(clients["sqs"], env["INGEST_QUEUE_URL"])
        assert [
            unquote_plus(json.loads(m["Body"])["Records"][0]["s3"]["object"]["key"]) for m in messages
        ] == ["uploads/t/p/u.json"]
        # A Session plus endpoint_url works too, and the endpoint is handed on to the functions.
        env2 = create_from_template(
            TEMPLATE, session, region=REGION, prefix="acx-srv2", parameters=P256, endpoint_url=endpoint
        )
        assert env2["AWS_ENDPOINT_URL"] == endpoint
        tables = clients["dynamodb"].list_tables()["TableNames"]
        assert env2["HEADS_TABLE"] in tables and env["HEADS_TABLE"] in tables
    finally:
        server.stop()


def test_tables_named_for_tests_and_benches_have_the_templates_keys(template: dict[str, Any]) -> None:
    """The log-store-only helper creates exactly what template.yaml declares for each table it names."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_tables_named(client, {"RECORDS_TABLE": "r", "JOBS_TABLE": "j"}, TEMPLATE)
        for name, logical in (("r", "RecordsTable"), ("j", "JobsTable")):
            table = client.describe_table(TableName=name)["Table"]
            props = template["Resources"][logical]["Properties"]
            assert table["KeySchema"] == props["KeySchema"]
            assert sorted(table["AttributeDefinitions"], key=str) == sorted(
                props["AttributeDefinitions"], key=str
            )
        for variable in ("LOG_LEVEL", "UPLOADS_BUCKET", "NO_SUCH_VARIABLE"):  # a parameter, a bucket, nothing
            with pytest.raises(TemplateError, match=variable):
                create_tables_named(client, {variable: "x"}, TEMPLATE)
