"""Create the stack's data resources in moto, read from template.yaml (never repeated in code).

`create_from_template` walks the template's `Resources` and creates, in dependency order: KMS keys
(and aliases), SQS queues (dead-letter queues first, redrive policies resolved), S3 buckets
(versioning, default encryption, public access block, lifecycle, the uploads/ ObjectCreated -> SQS
notification), DynamoDB tables (keys, GSIs/LSIs, SSE, point-in-time recovery, TTL) and SNS topics.
It returns the functions' environment: every variable of the template's `Globals.Function.Environment`
resolved to the local names, plus `<QUEUE>_URL` for every queue (INGEST_QUEUE_URL, INGEST_DLQ_URL,
EXPORT_DLQ_URL, ...) for the tests' SQS pumps.

Works against `moto.mock_aws` (pass a boto3 Session) and against a `ThreadedMotoServer` (pass a
Session plus `endpoint_url`, or a mapping of ready-made clients). A template asking for an Ed25519
signing key needs tests/integration/moto_ed25519.py's block around the call (moto has no such keys).
IAM roles, functions, the HTTP API, policies, alarms and log groups are not created: moto neither
enforces nor needs them.

An interpreter of the template's intrinsics (``Ref``, ``GetAtt``, ``Sub``, conditions) and one
creator per resource type, all resolving through the same state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acx.local.resources import TemplateError, load_template

SERVICES = ("dynamodb", "s3", "sqs", "kms", "sns")
_FAKE_STACK_UUID = "00000000-0000-4000-8000-000000000000"

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


# --------------------------------------------------------------------------- names


def local_name(prefix: str, logical_id: str) -> str:
    """Local physical name of a resource: `<prefix>-<kebab-case logical id>` (valid for S3 too)."""
    return f"{prefix}-{_words(logical_id).replace('_', '-').lower()}"


def env_var_for(logical_id: str) -> str:
    """`IngestDLQ` -> `INGEST_DLQ`, `ExportQueue` -> `EXPORT_QUEUE` (used for `<QUEUE>_URL`)."""
    return _words(logical_id).upper()


def _words(identifier: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", identifier)


# --------------------------------------------------------------------------- the creator


class Creator:
    """One pass over one template; holds the resolved physical resources."""

    def __init__(
        self,
        template: dict[str, Any],
        clients: Mapping[str, Any],
        *,
        account: str,
        region: str,
        prefix: str,
        parameters: Mapping[str, str],
    ) -> None:
        self.template = template
        self.clients = clients
        self.account = account
        self.region = region
        self.prefix = prefix
        self.resources: dict[str, dict[str, Any]] = dict(template.get("Resources") or {})
        self.params = self._parameters(parameters)
        self.physical: dict[str, dict[str, str]] = {}
        self._conditions: dict[str, bool] = {}

    # -- parameters and conditions -------------------------------------------------------------
    def _parameters(self, overrides: Mapping[str, str]) -> dict[str, str]:
        declared = self.template.get("Parameters") or {}
        unknown = set(overrides) - set(declared)
        if unknown:
            raise TemplateError(f"unknown parameter override(s): {sorted(unknown)}")
        values: dict[str, str] = {}
        for name, spec in declared.items():
            if name in overrides:
                value: Any = overrides[name]
            elif "Default" in spec:
                value = spec["Default"]
            else:
                # Deployment-only parameters (JWT issuer, ...) have no meaning locally.
                value = ""
            allowed = spec.get("AllowedValues")
            if name in overrides and allowed is not None and str(value) not in {str(a) for a in allowed}:
                raise TemplateError(f"parameter {name}={value!r} not in {allowed}")
            values[name] = str(value)
        return values

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            spec = (self.template.get("Conditions") or {}).get(name)
            if spec is None:
                raise TemplateError(f"unknown condition {name}")
            self._conditions[name] = bool(self._eval_condition(spec))
        return self._conditions[name]

    def _eval_condition(self, spec: Any) -> bool:
        if isinstance(spec, dict) and len(spec) == 1:
            ((fn, arg),) = spec.items()
            if fn == "Fn::Equals":
                left, right = (self.resolve(a) for a in arg)
                return str(left) == str(right)
            if fn == "Fn::Not":
                return not self._eval_condition(arg[0])
            if fn == "Fn::And":
                return all(self._eval_condition(a) for a in arg)
            if fn == "Fn::Or":
                return any(self._eval_condition(a) for a in arg)
            if fn == "Condition":
                return self.condition(arg)
        raise TemplateError(f"unsupported condition {spec!r}")

    def enabled(self, logical_id: str) -> bool:
        cond = self.resources[logical_id].get("Condition")
        return True if cond is None else self.condition(cond)

    # -- intrinsic functions -------------------------------------------------------------------
    def pseudo(self, name: str) -> str | None:
        return {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::StackName": self.prefix,
            "AWS::StackId": (
                f"arn:aws:cloudformation:{self.region}:{self.account}:stack/{self.prefix}/{_FAKE_STACK_UUID}"
            ),
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": None,
        }.get(name)

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self.params:
            return self.params[name]
        if name in self.physical:
            return self.physical[name]["ref"]
        if name in self.resources:
            raise TemplateError(f"{name} is referenced before it exists (or is not created locally)")
        raise TemplateError(f"unknown reference {name}")

    def get_att(self, logical_id: str, attribute: str) -> str:
        phys = self.physical.get(logical_id)
        if phys is None or attribute not in phys:
            raise TemplateError(f"cannot resolve {logical_id}.{attribute} locally")
        return phys[attribute]

    def resolve(self, value: Any) -> Any:
        """Resolve intrinsic functions against the parameters and the resources created so far."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((fn, arg),) = value.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                parts = arg if isinstance(arg, list) else str(arg).split(".", 1)
                return self.get_att(parts[0], parts[1])
            if fn == "Fn::Sub":
                return self._sub(arg)
            if fn == "Fn::If":
                name, when_true, when_false = arg
                return self.resolve(when_true if self.condition(name) else when_false)
            if fn == "Fn::Join":
                sep, items = arg
                return str(sep).join(str(i) for i in self.resolve(items))
            if fn == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(self.resolve(index))]
            if fn == "Fn::Split":
                sep, text = arg
                return str(self.resolve(text)).split(sep)
            if fn.startswith("Fn::") or fn == "Condition":
                raise TemplateError(f"unsupported intrinsic {fn}")
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub(self, arg: Any) -> str:
        if isinstance(arg, list):
            text, variables = arg[0], {k: self.resolve(v) for k, v in arg[1].items()}
        else:
            text, variables = arg, {}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, str(text))

    # -- creation ------------------------------------------------------------------------------
    def of_type(self, cfn_type: str) -> list[str]:
        return [
            logical_id
            for logical_id, res in self.resources.items()
            if res.get("Type") == cfn_type and self.enabled(logical_id)
        ]

    def props(self, logical_id: str) -> dict[str, Any]:
        return dict(self.resources[logical_id].get("Properties") or {})

    def create_all(self) -> None:
        for key_id in self.of_type("AWS::KMS::Key"):
            self.create_key(key_id)
        for alias_id in self.of_type("AWS::KMS::Alias"):
            self.create_alias(alias_id)
        for queue_id in self._queues_in_dependency_order():
            self.create_queue(queue_id)
        for topic_id in self.of_type("AWS::SNS::Topic"):
            self.create_topic(topic_id)
        for table_id in self.of_type("AWS::DynamoDB::Table"):
            self.create_table(table_id)
        for bucket_id in self.of_type("AWS::S3::Bucket"):
            self.create_bucket(bucket_id)

    def create_key(self, logical_id: str) -> None:
        kms = self.clients["kms"]
        p = self.props(logical_id)
        spec = str(self.resolve(p.get("KeySpec", "SYMMETRIC_DEFAULT")))
        usage = str(self.resolve(p.get("KeyUsage", "ENCRYPT_DECRYPT")))
        args: dict[str, Any] = {"KeySpec": spec, "KeyUsage": usage}
        if "Description" in p:
            args["Description"] = str(self.resolve(p["Description"]))
        meta = kms.create_key(**args)["KeyMetadata"]
        if self.resolve(p.get("EnableKeyRotation", False)) in (True, "true", "True"):
            kms.enable_key_rotation(KeyId=meta["KeyId"])
        self.physical[logical_id] = {"ref": meta["KeyId"], "Arn": meta["Arn"], "KeyId": meta["KeyId"]}

    def create_alias(self, logical_id: str) -> None:
        p = self.props(logical_id)
        name = str(self.resolve(p["AliasName"]))
        self.clients["kms"].create_alias(AliasName=name, TargetKeyId=self.resolve(p["TargetKeyId"]))
        self.physical[logical_id] = {"ref": name}

    def _queues_in_dependency_order(self) -> list[str]:
        queues = self.of_type("AWS::SQS::Queue")
        dlqs = {
            target
            for q in queues
            for target in _refs_in(self.props(q).get("RedrivePolicy"))
            if target in queues
        }
        return [q for q in queues if q in dlqs] + [q for q in queues if q not in dlqs]

    def create_queue(self, logical_id: str) -> None:
        sqs = self.clients["sqs"]
        p = self.props(logical_id)
        attributes: dict[str, str] = {}
        for key, value in p.items():
            if key in ("QueueName", "Tags"):
                continue
            resolved = self.resolve(value)
            if isinstance(resolved, (dict, list)):
                attributes[key] = json.dumps(resolved)
            elif isinstance(resolved, bool):
                attributes[key] = "true" if resolved else "false"
            else:
                attributes[key] = str(resolved)
        name = local_name(self.prefix, logical_id)
        if str(p.get("FifoQueue", "")).lower() == "true":
            name += ".fifo"
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.physical[logical_id] = {"ref": url, "Arn": arn, "QueueName": name, "QueueUrl": url}

    def create_topic(self, logical_id: str) -> None:
        p = self.props(logical_id)
        attributes = {key: str(self.resolve(p[key])) for key in ("KmsMasterKeyId", "DisplayName") if key in p}
        name = local_name(self.prefix, logical_id)
        arn = self.clients["sns"].create_topic(Name=name, Attributes=attributes)["TopicArn"]
        self.physical[logical_id] = {"ref": arn, "TopicArn": arn, "TopicName": name}

    def create_table(self, logical_id: str) -> None:
        ddb = self.clients["dynamodb"]
        p = self.props(logical_id)
        name = local_name(self.prefix, logical_id)
        args: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": self.resolve(p["AttributeDefinitions"]),
            "KeySchema": self.resolve(p["KeySchema"]),
            "BillingMode": self.resolve(p.get("BillingMode", "PAY_PER_REQUEST")),
        }
        if args["BillingMode"] == "PROVISIONED":
            args["ProvisionedThroughput"] = self.resolve(p["ProvisionedThroughput"])
        for index_key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            if index_key in p:
                args[index_key] = [
                    {k: v for k, v in index.items() if k != "ContributorInsightsSpecification"}
                    for index in self.resolve(p[index_key])
                ]
        sse = self.resolve(p.get("SSESpecification"))
        if sse and sse.get("SSEEnabled") in (True, "true"):
            args["SSESpecification"] = {"Enabled": True, "SSEType": sse.get("SSEType", "KMS")}
            if sse.get("KMSMasterKeyId"):
                args["SSESpecification"]["KMSMasterKeyId"] = sse["KMSMasterKeyId"]
        description = ddb.create_table(**args)["TableDescription"]
        pitr = self.resolve(p.get("PointInTimeRecoverySpecification")) or {}
        if pitr.get("PointInTimeRecoveryEnabled") in (True, "true"):
            ddb.update_continuous_backups(
                TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
            )
        ttl = self.resolve(p.get("TimeToLiveSpecification")) or {}
        if ttl.get("Enabled") in (True, "true"):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )
        self.physical[logical_id] = {"ref": name, "Arn": description["TableArn"]}

    def create_bucket(self, logical_id: str) -> None:
        s3 = self.clients["s3"]
        p = self.props(logical_id)
        name = local_name(self.prefix, logical_id)
        if self.region == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region})
        self.physical[logical_id] = {
            "ref": name,
            "Arn": f"arn:aws:s3:::{name}",
            "DomainName": f"{name}.s3.amazonaws.com",
        }
        if "OwnershipControls" in p:
            s3.put_bucket_ownership_controls(
                Bucket=name, OwnershipControls=self.resolve(p["OwnershipControls"])
            )
        if "PublicAccessBlockConfiguration" in p:
            s3.put_public_access_block(
                Bucket=name, PublicAccessBlockConfiguration=self.resolve(p["PublicAccessBlockConfiguration"])
            )
        versioning = self.resolve(p.get("VersioningConfiguration")) or {}
        if versioning.get("Status"):
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": versioning["Status"]})
        if "BucketEncryption" in p:
            rules = []
            for rule in self.resolve(p["BucketEncryption"])["ServerSideEncryptionConfiguration"]:
                default = rule["ServerSideEncryptionByDefault"]
                api_default = {"SSEAlgorithm": default["SSEAlgorithm"]}
                if default.get("KMSMasterKeyID"):
                    api_default["KMSMasterKeyID"] = default["KMSMasterKeyID"]
                api_rule: dict[str, Any] = {"ApplyServerSideEncryptionByDefault": api_default}
                if "BucketKeyEnabled" in rule:
                    api_rule["BucketKeyEnabled"] = bool(rule["BucketKeyEnabled"])
                rules.append(api_rule)
            s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
        if "LifecycleConfiguration" in p:
            lifecycle = [_lifecycle_rule(r) for r in self.resolve(p["LifecycleConfiguration"])["Rules"]]
            s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": lifecycle})
        notification = self.resolve(p.get("NotificationConfiguration")) or {}
        queue_configs = [_queue_notification(c) for c in notification.get("QueueConfigurations", [])]
        if queue_configs:
            s3.put_bucket_notification_configuration(
                Bucket=name, NotificationConfiguration={"QueueConfigurations": queue_configs}
            )
            for config in queue_configs:
                self._drain_s3_test_event(config["QueueArn"])

    def _drain_s3_test_event(self, queue_arn: str) -> None:
        """S3 (and moto) posts one `s3:TestEvent` when a notification is set; drop it locally."""
        url = next((p["QueueUrl"] for p in self.physical.values() if p.get("Arn") == queue_arn), None)
        if url is None:
            return
        sqs = self.clients["sqs"]
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        for message in messages:
            if '"s3:TestEvent"' in message.get("Body", ""):
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            else:
                sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )

    # -- environment ---------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        globals_env = (
            ((self.template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}
        ).get("Variables") or {}
        env: dict[str, str] = {}
        for key, value in globals_env.items():
            resolved = self.resolve(value)
            env[key] = "" if resolved is None else str(resolved)
        for logical_id, phys in self.physical.items():
            if "QueueUrl" in phys:
                env.setdefault(f"{env_var_for(logical_id)}_URL", phys["QueueUrl"])
        return env


def _refs_in(value: Any) -> set[str]:
    """Logical ids named by Ref/GetAtt anywhere inside `value`."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                found.add(inner)
            elif key == "Fn::GetAtt":
                found.add(inner[0] if isinstance(inner, list) else str(inner).split(".", 1)[0])
            else:
                found |= _refs_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= _refs_in(inner)
    return found


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation lifecycle rule -> S3 API lifecycle rule (the subset the template uses)."""
    out: dict[str, Any] = {"ID": rule.get("Id", "rule"), "Status": rule.get("Status", "Enabled")}
    out["Filter"] = {"Prefix": rule.get("Prefix", "")}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
    if "NoncurrentVersionExpiration" in rule:
        days = int(rule["NoncurrentVersionExpiration"]["NoncurrentDays"])
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": days}
    return out


def _queue_notification(config: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation QueueConfiguration -> S3 API QueueConfiguration."""
    out: dict[str, Any] = {"QueueArn": config["Queue"], "Events": [config["Event"]]}
    rules = ((config.get("Filter") or {}).get("S3Key") or {}).get("Rules")
    if rules:
        out["Filter"] = {"Key": {"FilterRules": [{"Name": r["Name"], "Value": r["Value"]} for r in rules]}}
    return out


def _clients(session_or_clients: Any, region: str, endpoint_url: str | None) -> Mapping[str, Any]:
    if isinstance(session_or_clients, Mapping):
        missing = [s for s in SERVICES if s not in session_or_clients]
        if missing:
            raise TemplateError(f"clients missing for {missing}")
        return session_or_clients
    from botocore.config import Config

    kwargs: dict[str, Any] = {"region_name": region}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    clients = {}
    for service in SERVICES:
        config = Config(signature_version="s3v4") if service == "s3" else None
        clients[service] = session_or_clients.client(service, config=config, **kwargs)
    return clients


def create_from_template(
    template_path: Path,
    clients: Any,
    *,
    account: str = "123456789012",
    region: str = "us-east-1",
    prefix: str = "acx-local",
    parameters: Mapping[str, str] | None = None,
    endpoint_url: str | None = None,
) -> dict[str, str]:
    """Create the template's data resources in moto and return the functions' environment variables.

    `clients` is a boto3 Session (clients are made with `region` and `endpoint_url`) or a
    mapping with ready clients for dynamodb, s3, sqs, kms and sns. `parameters` overrides template
    parameter defaults (e.g. `{"SigningKeySpec": "ECC_NIST_P256"}`). The result holds every
    `Globals.Function.Environment` variable plus `<QUEUE>_URL` for each queue, and
    `AWS_ENDPOINT_URL` when `endpoint_url` is given.
    """
    template = load_template(template_path)
    creator = Creator(
        template,
        _clients(clients, region, endpoint_url),
        account=account,
        region=region,
        prefix=prefix,
        parameters=dict(parameters or {}),
    )
    creator.create_all()
    env = creator.environment()
    if endpoint_url:
        env["AWS_ENDPOINT_URL"] = endpoint_url
    return env
