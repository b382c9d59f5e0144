"""template.yaml: least-privilege IAM, encrypted and private storage, runtime, auth, outputs, cfn-lint.

Each rule is a function returning a list of problems; every rule is run against the real template
(no problems) and against a deliberately broken copy (the problem is found), so a rule that silently
stopped checking would fail here too.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acx.local.resources import load_template
from tests.api_docs import documented_routes

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
GUARDED_SERVICES = ("s3", "dynamodb", "kms")
PUBLIC_ROUTES = {
    ("GET", "/v1/health"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/trust-registry"),
    ("GET", "/console"),
    ("GET", "/console/{asset}"),
}
REQUIRED_OUTPUTS = {
    "ApiUrl",
    "UploadsBucketName",
    "DataBucketName",
    "CartridgesBucketName",
    "RecordsTableName",
    "ReceiptsTableName",
    "HeadsTableName",
    "JobsTableName",
    "IdempotencyTableName",
    "SigningKeyId",
    "AlarmTopicArn",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


# --------------------------------------------------------------------------- helpers


def resources_of(t: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in t["Resources"].items() if v.get("Type") == cfn_type}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def ref_target(value: Any) -> str | None:
    """Logical id behind `!Ref X` / `!GetAtt X.Attr`, else None."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def text_of(value: Any) -> str:
    """A resource entry as text: a literal, or the template string of a !Sub."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        return str(sub[0] if isinstance(sub, list) else sub)
    return ""


def function_props(t: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """Function properties with SAM Globals merged in (function values win)."""
    merged = dict(t.get("Globals", {}).get("Function", {}))
    own = t["Resources"][logical_id].get("Properties", {})
    merged.update(own)
    if "Layers" in own:  # SAM appends a function's Layers to the Globals' ones (lists are additive)
        merged["Layers"] = [
            *as_list(t.get("Globals", {}).get("Function", {}).get("Layers", [])),
            *own["Layers"],
        ]
    return merged


def function_statements(t: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    """Every IAM statement a function gets: its own Policies plus its explicit role's policies."""
    props = t["Resources"][logical_id].get("Properties", {})
    statements: list[dict[str, Any]] = []
    for policy in as_list(props.get("Policies", [])):
        statements.extend(as_list(policy.get("Statement", [])) if isinstance(policy, dict) else [])
    role_id = ref_target(props.get("Role"))
    if role_id:
        role = t["Resources"][role_id]["Properties"]
        for policy in role.get("Policies", []):
            statements.extend(as_list(policy["PolicyDocument"]["Statement"]))
    return statements


# --------------------------------------------------------------------------- rules


def iam_problems(t: dict[str, Any]) -> list[str]:
    """`*` actions/resources for s3, dynamodb, kms; SAM policy templates; managed policies."""
    problems: list[str] = []
    wildcard_resource = re.compile(
        r"^arn:[^:]*:(s3:::\*|dynamodb:[^:]*:[^:]*:table/\*|kms:[^:]*:[^:]*:key/\*)"
    )
    for fn in resources_of(t, "AWS::Serverless::Function"):
        props = t["Resources"][fn].get("Properties", {})
        for policy in as_list(props.get("Policies", [])):
            if not (isinstance(policy, dict) and "Statement" in policy):
                problems.append(f"{fn}: SAM policy template or managed policy {policy!r}")
        if not props.get("Role"):
            problems.append(f"{fn}: no explicit role (SAM would attach managed policies)")
        role_id = ref_target(props.get("Role"))
        if role_id and t["Resources"][role_id]["Properties"].get("ManagedPolicyArns"):
            problems.append(f"{fn}: role {role_id} has managed policies")
        for st in function_statements(t, fn):
            if st.get("Effect") != "Allow":
                continue
            actions = [str(a) for a in as_list(st.get("Action", []))]
            if "*" in actions:
                problems.append(f"{fn}: Action '*'")
            guarded = [a for a in actions if a.split(":", 1)[0].lower() in GUARDED_SERVICES]
            problems += [f"{fn}: wildcard action {a}" for a in guarded if "*" in a]
            if not guarded:
                continue
            for res in as_list(st.get("Resource", [])):
                text = text_of(res)
                if res == "*" or (text and wildcard_resource.match(text)):
                    problems.append(f"{fn}: wildcard resource {res!r} for {guarded}")
            if "NotResource" in st or "NotAction" in st:
                problems.append(f"{fn}: NotAction/NotResource for {guarded}")
    return problems


def signing_key_problems(t: dict[str, Any]) -> list[str]:
    """Only named signing roles may kms:Sign; the root statement must not delegate it to IAM."""
    problems: list[str] = []
    keys = {
        k: v
        for k, v in resources_of(t, "AWS::KMS::Key").items()
        if v["Properties"].get("KeyUsage") == "SIGN_VERIFY"
    }
    if len(keys) != 1:
        return [f"expected one signing key, found {sorted(keys)}"]
    ((key_id, key),) = keys.items()
    props = key["Properties"]
    if ref_target(props.get("KeySpec")) != "SigningKeySpec":
        problems.append("signing key spec does not come from the SigningKeySpec parameter")
    for st in props["KeyPolicy"]["Statement"]:
        actions = as_list(st.get("Action", []))
        signs = any(a in ("kms:*", "kms:Sign", "*") or a.startswith("kms:Sign") for a in actions)
        principal = st.get("Principal", {})
        if signs and st.get("Effect") == "Allow":
            aws = as_list(principal.get("AWS", [])) if isinstance(principal, dict) else [principal]
            named = as_list(st.get("Condition", {}).get("ArnEquals", {}).get("aws:PrincipalArn", []))
            if principal == "*" or not aws:
                problems.append(f"{key_id}: {st.get('Sid')} lets a non-role principal sign")
            elif all(ref_target(p) is not None for p in aws):
                continue  # roles named as principals
            elif not named or any(ref_target(p) is None for p in named):
                # The account root delegates to IAM: only a condition naming the roles keeps
                # "no IAM policy can add a signer" true.
                problems.append(f"{key_id}: {st.get('Sid')} lets a non-role principal sign")
    return problems


def deploy_problems(t: dict[str, Any]) -> list[str]:
    """What fails a deployment on a fresh account, or makes one failure run (and alarm) three times."""
    problems: list[str] = []
    res = t["Resources"]
    for fn in resources_of(t, "AWS::Serverless::Function"):
        reserved = res[fn]["Properties"].get("ReservedConcurrentExecutions")
        if reserved is None:
            continue
        branches = reserved.get("Fn::If") if isinstance(reserved, dict) else None
        default = t["Parameters"].get(ref_target(branches[1]) or "", {}).get("Default") if branches else None
        if not (branches and ref_target(branches[2]) == "AWS::NoValue" and default == 0):
            problems.append(f"{fn}: reserved concurrency by default ({reserved!r})")
    schedules = [
        fn
        for fn in resources_of(t, "AWS::Serverless::Function")
        if any(e["Type"] == "Schedule" for e in res[fn]["Properties"].get("Events", {}).values())
    ]
    configs = {
        ref_target(c["Properties"]["FunctionName"]): c["Properties"]
        for c in resources_of(t, "AWS::Lambda::EventInvokeConfig").values()
    }
    for fn in schedules:
        config = configs.get(fn) or res[fn]["Properties"].get("EventInvokeConfig")
        if not config or config.get("MaximumRetryAttempts") != 0:
            problems.append(f"{fn}: Lambda retries its asynchronous (scheduled) invocations")
    for key_id, key in resources_of(t, "AWS::KMS::Key").items():
        for st in key["Properties"]["KeyPolicy"]["Statement"]:
            principal = st.get("Principal", {})
            aws = as_list(principal.get("AWS", [])) if isinstance(principal, dict) else []
            roles = [ref_target(p) for p in aws if ref_target(p) in resources_of(t, "AWS::IAM::Role")]
            if roles:
                problems.append(f"{key_id}: {st.get('Sid')} names roles of this stack as principals {roles}")
    return problems


def bucket_problems(t: dict[str, Any]) -> list[str]:
    """Block Public Access, SSE-KMS with the data key, TLS-only bucket policy, on every bucket."""
    problems: list[str] = []
    buckets = resources_of(t, "AWS::S3::Bucket")
    log_targets = {
        ref_target(b["Properties"].get("LoggingConfiguration", {}).get("DestinationBucketName"))
        for b in buckets.values()
    }
    tls_only: set[str] = set()
    for policy in resources_of(t, "AWS::S3::BucketPolicy").values():
        target = ref_target(policy["Properties"]["Bucket"])
        for st in as_list(policy["Properties"]["PolicyDocument"]["Statement"]):
            cond = st.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport")
            if (
                st.get("Effect") == "Deny"
                and str(cond).lower() == "false"
                and "s3:*" in as_list(st["Action"])
            ):
                covered = {text_of(r) or str(ref_target(r)) for r in as_list(st["Resource"])}
                if target and any(c.endswith("/*") for c in covered) and target in covered:
                    tls_only.add(target)
    for name, bucket in buckets.items():
        props = bucket["Properties"]
        block = props.get("PublicAccessBlockConfiguration", {})
        keys = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
        if not all(block.get(k) is True for k in keys):
            problems.append(f"{name}: Block Public Access incomplete")
        rules = props.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration", [])
        default = rules[0].get("ServerSideEncryptionByDefault", {}) if rules else {}
        if name in log_targets:
            # S3 server access logs can only be delivered to an SSE-S3 bucket.
            if default.get("SSEAlgorithm") not in ("AES256", "aws:kms"):
                problems.append(f"{name}: log bucket without SSE")
        elif (
            default.get("SSEAlgorithm") != "aws:kms" or ref_target(default.get("KMSMasterKeyID")) != "DataKey"
        ):
            problems.append(f"{name}: not SSE-KMS with the data key")
        if name not in tls_only:
            problems.append(f"{name}: no TLS-only (aws:SecureTransport=false -> Deny) bucket policy")
    return problems


def table_problems(t: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for name, table in resources_of(t, "AWS::DynamoDB::Table").items():
        props = table["Properties"]
        if props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled") is not True:
            problems.append(f"{name}: PITR off")
        sse = props.get("SSESpecification", {})
        if sse.get("SSEEnabled") is not True or sse.get("SSEType") != "KMS":
            problems.append(f"{name}: no SSE-KMS")
        if props.get("BillingMode") != "PAY_PER_REQUEST":
            problems.append(f"{name}: not on-demand")
    return problems


def function_problems(t: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    functions = resources_of(t, "AWS::Serverless::Function")
    if set(functions) != {"ApiFunction", "IngestFunction", "VerifyFunction", "ExportFunction"}:
        problems.append(f"unexpected function set {sorted(functions)}")
    for fn in functions:
        props = function_props(t, fn)
        if props.get("Runtime") != "python3.12":
            problems.append(f"{fn}: runtime {props.get('Runtime')}")
        if props.get("Architectures") != ["arm64"]:
            problems.append(f"{fn}: architectures {props.get('Architectures')}")
        if "AcxLayer" not in {ref_target(layer) for layer in as_list(props.get("Layers", []))}:
            problems.append(f"{fn}: without the AcxLayer")
        if props.get("Handler") != "app.lambda_handler":
            problems.append(f"{fn}: handler {props.get('Handler')}")
        code = str(props.get("CodeUri", ""))
        if not re.fullmatch(r"functions/[a-z]+/", code) or not (ROOT / code).is_dir():
            problems.append(f"{fn}: CodeUri {code!r} is not an existing functions/<name>/")
        if props.get("Tracing") != "Active":
            problems.append(f"{fn}: tracing not active")
        group = ref_target(props.get("LoggingConfig", {}).get("LogGroup"))
        if not group or "RetentionInDays" not in t["Resources"][group]["Properties"]:
            problems.append(f"{fn}: no own log group with retention")
    layer = t["Resources"].get("AcxLayer", {})
    lp = layer.get("Properties", {})
    if (
        layer.get("Type") != "AWS::Serverless::LayerVersion"
        or lp.get("ContentUri") != "layers/acx/"
        or lp.get("CompatibleRuntimes") != ["python3.12"]
        or lp.get("CompatibleArchitectures") != ["arm64"]
        or layer.get("Metadata", {}).get("BuildMethod") != "makefile"
    ):
        problems.append("AcxLayer is not the python3.12/arm64 layer built from layers/acx/")
    return problems


def api_routes(t: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    routes: dict[tuple[str, str], dict[str, Any]] = {}
    for fn in resources_of(t, "AWS::Serverless::Function"):
        for event in t["Resources"][fn]["Properties"].get("Events", {}).values():
            if event["Type"] == "HttpApi" and "Path" in event["Properties"]:  # not the $default route
                p = event["Properties"]
                routes[(p["Method"].upper(), p["Path"])] = p
    return routes


def route_scopes(props: dict[str, Any], prefix: str = "") -> list[str]:
    """A route's AuthorizationScopes with ${ScopePrefix} resolved to ``prefix``."""
    return [
        text_of(s).replace("${ScopePrefix}", prefix)
        for s in props.get("Auth", {}).get("AuthorizationScopes", [])
    ]


def auth_problems(t: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    apis = resources_of(t, "AWS::Serverless::HttpApi")
    if len(apis) != 1:
        return [f"expected one HttpApi, found {sorted(apis)}"]
    auth = next(iter(apis.values()))["Properties"].get("Auth", {})
    default = auth.get("DefaultAuthorizer")
    jwt = auth.get("Authorizers", {}).get(default, {}).get("JwtConfiguration", {})
    if ref_target(jwt.get("issuer")) != "JwtIssuer":
        problems.append("default authorizer is not a JWT authorizer with issuer=!Ref JwtIssuer")
    if "JwtAudience" not in {ref_target(a) for a in as_list(jwt.get("audience", []))}:
        problems.append("JWT authorizer audience is not !Ref JwtAudience")
    for route, props in api_routes(t).items():
        public = props.get("Auth", {}).get("Authorizer") == "NONE"
        if public != (route in PUBLIC_ROUTES):
            problems.append(f"{route}: public={public}")
        scopes = props.get("Auth", {}).get("AuthorizationScopes", [])
        if not public and not scopes:
            problems.append(f"{route}: no route scopes")
        if any(not text_of(s).startswith("${ScopePrefix}") for s in scopes):
            problems.append(f"{route}: a route scope without the identity provider's ${{ScopePrefix}}")
    return problems


def output_problems(t: dict[str, Any]) -> list[str]:
    return [f"missing output {o}" for o in sorted(REQUIRED_OUTPUTS - set(t.get("Outputs", {})))]


# --------------------------------------------------------------------------- tests on the template


def test_function_policies_have_no_wildcards_for_s3_dynamodb_kms(template) -> None:
    assert iam_problems(template) == []


def test_only_the_signing_roles_may_sign(template) -> None:
    assert signing_key_problems(template) == []


def test_buckets_are_private_encrypted_and_tls_only(template) -> None:
    assert bucket_problems(template) == []


def test_tables_have_pitr_and_sse(template) -> None:
    assert table_problems(template) == []


def test_functions_run_python312_arm64_with_the_layer(template) -> None:
    assert function_problems(template) == []


def test_jwt_authorizer_guards_every_route_but_the_public_ones(template) -> None:
    assert auth_problems(template) == []


def test_every_documented_route_is_deployed_with_its_scope(template) -> None:
    documented = documented_routes()
    assert len(documented) >= 14
    deployed = api_routes(template)
    assert set(documented) == set(deployed)
    for route, scope in documented.items():
        got = deployed[route].get("Auth", {}).get("AuthorizationScopes", [])
        # Every scope carries the identity provider's prefix (Cognito: <resource-server>/<scope>).
        assert got == ([] if scope == "none" else [{"Fn::Sub": "${ScopePrefix}" + scope}]), route


def test_unmatched_requests_reach_the_api_function_through_the_jwt_authorizer(template) -> None:
    """The $default route (an HttpApi event with no Path and no Method: SAM's catch-all) lets the
    function answer 404 in the service's error shape; it must stay behind the default JWT authorizer
    (no Authorizer: NONE), so an anonymous request never invokes the function."""
    from acx.local.gateway import has_default_route

    catch_all = [
        (fn, event["Properties"])
        for fn in resources_of(template, "AWS::Serverless::Function")
        for event in template["Resources"][fn]["Properties"].get("Events", {}).values()
        if event["Type"] == "HttpApi" and not {"Path", "Method"} & set(event["Properties"])
    ]
    assert [fn for fn, _ in catch_all] == ["ApiFunction"]
    props = catch_all[0][1]
    assert ref_target(props["ApiId"]) == "HttpApi"
    assert props.get("Auth", {}).get("Authorizer") != "NONE"
    assert has_default_route()


def test_required_outputs(template) -> None:
    assert output_problems(template) == []


def test_environment_names_every_setting_the_code_reads(template) -> None:
    from acx.config import Settings

    env = template["Globals"]["Function"]["Environment"]["Variables"]
    read = {f.alias for f in Settings.model_fields.values() if f.alias}
    assert read - {"AWS_ENDPOINT_URL", "AWS_REGION"} <= set(env)
    assert {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"} <= set(env)


def test_queues_dlqs_and_event_sources(template) -> None:
    res = template["Resources"]
    for queue, dlq, fn in (
        ("IngestQueue", "IngestDLQ", "IngestFunction"),
        ("ExportQueue", "ExportDLQ", "ExportFunction"),
    ):
        qp = res[queue]["Properties"]
        assert ref_target(qp["RedrivePolicy"]["deadLetterTargetArn"]) == dlq
        assert qp["RedrivePolicy"]["maxReceiveCount"] == 3
        assert ref_target(qp["KmsMasterKeyId"]) == "DataKey"
        assert ref_target(res[dlq]["Properties"]["KmsMasterKeyId"]) == "DataKey"
        (event,) = res[fn]["Properties"]["Events"].values()
        assert event["Type"] == "SQS" and ref_target(event["Properties"]["Queue"]) == queue
        assert 1 <= event["Properties"]["BatchSize"] <= 10
        assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        timeout = function_props(template, fn)["Timeout"]
        assert qp["VisibilityTimeout"] >= 6 * timeout
    (notification,) = res["UploadsBucket"]["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    assert ref_target(notification["Queue"]) == "IngestQueue"
    assert notification["Filter"]["S3Key"]["Rules"] == [{"Name": "prefix", "Value": "uploads/"}]
    assert "IngestQueuePolicy" in as_list(res["UploadsBucket"].get("DependsOn", []))


def test_verify_runs_on_the_schedule_parameter_unreserved_by_default_and_is_not_retried(template) -> None:
    props = template["Resources"]["VerifyFunction"]["Properties"]
    assert props["ReservedConcurrentExecutions"]["Fn::If"][0] == "ReserveVerifyConcurrency"
    (event,) = props["Events"].values()
    assert event["Type"] == "Schedule" and ref_target(event["Properties"]["Schedule"]) == "VerifyScheduleRate"
    assert deploy_problems(template) == []


def test_alarms_cover_verification_dlqs_and_5xx(template) -> None:
    alarms = resources_of(template, "AWS::CloudWatch::Alarm").values()
    metrics = {
        (
            ref_target(a["Properties"]["Namespace"]) or a["Properties"]["Namespace"],
            a["Properties"]["MetricName"],
        )
        for a in alarms
    }
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert (ref_target(env["POWERTOOLS_METRICS_NAMESPACE"]), "VerificationFailed") in metrics
    assert ("AWS/ApiGateway", "5xx") in metrics
    dlq_alarms = {
        ref_target(d["Value"])
        for a in alarms
        if a["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
        for d in a["Properties"]["Dimensions"]
    }
    assert dlq_alarms == {"IngestDLQ", "ExportDLQ"}
    # The alarm must name the exact dimensions the code's EMF metrics carry, or it never fires.
    from acx.observability import SERVICE, metrics

    (failed,) = [a for a in alarms if a["Properties"]["MetricName"] == "VerificationFailed"]
    assert failed["Properties"]["Dimensions"] == [{"Name": "service", "Value": SERVICE}]
    assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE
    assert template["Parameters"]["MetricsNamespace"]["Default"] == metrics.namespace
    assert all(ref_target(x) == "AlarmTopic" for a in alarms for x in a["Properties"]["AlarmActions"])


def test_cfn_lint_reports_no_errors_or_warnings() -> None:
    from cfnlint.api import lint_file

    matches = lint_file(TEMPLATE)
    bad = [f"{m.rule.id} {m.message} (line {m.linenumber})" for m in matches if m.rule.id[0] in "EW"]
    assert bad == []


# --------------------------------------------------------------------------- the rules catch breakage


def _statement(t: dict[str, Any], role: str, sid: str) -> dict[str, Any]:
    for policy in t["Resources"][role]["Properties"]["Policies"]:
        for st in policy["PolicyDocument"]["Statement"]:
            if st.get("Sid") == sid:
                return st
    raise KeyError(sid)


@pytest.mark.parametrize(
    ("mutate", "rule", "expected"),
    [
        (
            lambda t: _statement(t, "ApiRole", "DataKey").update(Action="kms:*"),
            iam_problems,
            "wildcard action",
        ),
        (
            lambda t: _statement(t, "IngestRole", "DataKey").update(Resource="*"),
            iam_problems,
            "wildcard resource",
        ),
        (
            lambda t: _statement(t, "ExportRole", "WriteCartridges").update(Resource="arn:aws:s3:::*"),
            iam_problems,
            "wildcard resource",
        ),
        (
            lambda t: t["Resources"]["VerifyFunction"]["Properties"].update(Policies=["AmazonS3FullAccess"]),
            iam_problems,
            "SAM policy template",
        ),
        (
            lambda t: t["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"][0][
                "Action"
            ].append("kms:Sign"),
            signing_key_problems,
            "non-role principal",
        ),
        (
            lambda t: t["Resources"]["DataBucket"]["Properties"]["PublicAccessBlockConfiguration"].update(
                RestrictPublicBuckets=False
            ),
            bucket_problems,
            "Block Public Access",
        ),
        (
            lambda t: t["Resources"]["CartridgesBucket"]["Properties"].pop("BucketEncryption"),
            bucket_problems,
            "SSE-KMS",
        ),
        (lambda t: t["Resources"].pop("UploadsBucketPolicy"), bucket_problems, "TLS-only"),
        (
            lambda t: t["Resources"]["HeadsTable"]["Properties"].pop("PointInTimeRecoverySpecification"),
            table_problems,
            "PITR",
        ),
        (lambda t: t["Resources"]["JobsTable"]["Properties"].pop("SSESpecification"), table_problems, "SSE"),
        (
            lambda t: t["Resources"]["ExportFunction"]["Properties"].update(Runtime="python3.11"),
            function_problems,
            "runtime",
        ),
        (
            lambda t: t["Resources"]["IngestFunction"]["Properties"].update(Architectures=["x86_64"]),
            function_problems,
            "architectures",
        ),
        (
            lambda t: t["Globals"]["Function"].update(Layers=[]),
            function_problems,
            "AcxLayer",
        ),
        (
            lambda t: t["Resources"]["HttpApi"]["Properties"]["Auth"].pop("DefaultAuthorizer"),
            auth_problems,
            "JWT",
        ),
        (
            lambda t: t["Resources"]["ApiFunction"]["Properties"]["Events"]["GetLog"]["Properties"].update(
                Auth={"Authorizer": "NONE"}
            ),
            auth_problems,
            "public=True",
        ),
        (lambda t: t["Outputs"].pop("SigningKeyId"), output_problems, "SigningKeyId"),
        (
            lambda t: t["Resources"]["ApiFunction"]["Properties"]["Events"]["GetLog"]["Properties"][
                "Auth"
            ].update(AuthorizationScopes=["log:read"]),
            auth_problems,
            "ScopePrefix",
        ),
        (
            lambda t: t["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"][1].pop(
                "Condition"
            ),
            signing_key_problems,
            "non-role principal",
        ),
        (
            lambda t: t["Resources"]["VerifyFunction"]["Properties"].update(ReservedConcurrentExecutions=1),
            deploy_problems,
            "reserved concurrency",
        ),
        (
            lambda t: t["Resources"].pop("VerifyEventInvokeConfig"),
            deploy_problems,
            "retries its asynchronous",
        ),
        (
            lambda t: t["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"][1].update(
                Principal={"AWS": {"Fn::GetAtt": ["ApiRole", "Arn"]}}
            ),
            deploy_problems,
            "names roles of this stack",
        ),
    ],
)
def test_each_rule_catches_its_breakage(template, mutate, rule, expected: str) -> None:
    broken = copy.deepcopy(template)
    mutate(broken)
    problems = rule(broken)
    assert any(expected in p for p in problems), problems


def test_cfn_lint_catches_a_broken_template(tmp_path: Path) -> None:
    from cfnlint.api import lint_file

    broken = tmp_path / "template.yaml"
    broken.write_text(
        TEMPLATE.read_text(encoding="utf-8").replace("!GetAtt IngestDLQ.Arn", "!GetAtt NoSuchQueue.Arn"),
        encoding="utf-8",
    )
    assert any(m.rule.id.startswith("E") for m in lint_file(broken))


# --------------------------------------------------------------------------- the layer package (AcxLayer)


def _build_layer_module() -> Any:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "scripts" / "build_layer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_layer", module)
    spec.loader.exec_module(module)
    return module


def test_layer_zip_puts_acx_under_python_and_strips_runtime_packages(tmp_path: Path) -> None:
    import zipfile

    build_layer = _build_layer_module()
    site = tmp_path / "site"
    for junk in ("botocore", "boto3", "dateutil", "somepkg/tests", "somepkg/__pycache__", "bin"):
        (site / junk).mkdir(parents=True)
        (site / junk / "x.py").write_text("x = 1\n")
    (site / "python_dateutil-2.9.0.dist-info").mkdir()
    (site / "somepkg-1.0.dist-info").mkdir()
    (site / "somepkg-1.0.dist-info" / "RECORD").write_text("big\n")
    (site / "somepkg-1.0.dist-info" / "METADATA").write_text("Name: somepkg\n")
    (site / "somepkg" / "__init__.py").write_text("")
    build_layer.strip(site)
    left = sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))
    assert left == [
        "somepkg",
        "somepkg-1.0.dist-info",
        "somepkg-1.0.dist-info/METADATA",
        "somepkg/__init__.py",
    ]

    built = build_layer.build(tmp_path / "out", install=False, python=None)
    with zipfile.ZipFile(built.zip_path) as zf:
        names = zf.namelist()
        infos = zf.infolist()
    assert "python/acx/config.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")] and not built.compiled
    assert not [n for n in names if n.split("/")[2] in build_layer.CLIENT_ONLY], "client code in the layer"
    assert built.unzipped_bytes == sum(i.file_size for i in infos)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}  # deterministic


def test_layer_ships_unchecked_hash_pyc_files_compiled_by_python312(tmp_path: Path) -> None:
    """/opt is read-only on Lambda: without these every cold start compiles the layer's modules."""
    import struct
    import zipfile

    build_layer = _build_layer_module()
    python = build_layer.runtime_python()
    if python is None:
        pytest.skip("no CPython 3.12 here (make test-py312 needs one too)")
    built = build_layer.build(tmp_path / "out", install=False)
    assert built.compiled
    with zipfile.ZipFile(built.zip_path) as zf:
        names = set(zf.namelist())
        sources = sorted(n for n in names if n.endswith(".py"))
        assert len(sources) > 50
        for source in sources:
            folder, _, name = source.rpartition("/")
            pyc = f"{folder}/__pycache__/{name[:-3]}.cpython-312.pyc"
            assert pyc in names, pyc
        header = zf.read("python/acx/__pycache__/config.cpython-312.pyc")[:16]
    (flags,) = struct.unpack("<I", header[4:8])
    assert flags == 0b01  # hash-based, check_source off: loaded whatever the zip's 1980 mtimes
    probe = (
        "import marshal, sys, zipfile\n"
        "data = zipfile.ZipFile(sys.argv[1]).read('python/acx/__pycache__/config.cpython-312.pyc')\n"
        "print(marshal.loads(data[16:]).co_filename)"
    )
    out = subprocess.run([python, "-c", probe, built.zip_path], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "/opt/python/acx/config.py"  # where Lambda mounts the layer


# --------------------------------------------------------------------------- events/ samples


def test_sample_events_cover_every_route_and_parse(template) -> None:
    import json

    from aws_lambda_powertools.utilities.parser.models import (
        APIGatewayProxyEventV2Model,
        EventBridgeModel,
        S3Model,
        SqsModel,
    )

    events = ROOT / "events"
    by_route: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(events.glob("api-*.json")):
        event = json.loads(path.read_text(encoding="utf-8"))
        APIGatewayProxyEventV2Model.model_validate(event)
        method, route = event["routeKey"].split(" ", 1)
        assert event["requestContext"]["http"]["method"] == method
        by_route[(method, route)] = event
    routes = api_routes(template)
    assert set(by_route) == set(routes)
    for route, props in routes.items():
        authorizer = by_route[route]["requestContext"].get("authorizer")
        scopes = route_scopes(props)
        if route in PUBLIC_ROUTES:
            assert authorizer is None, route
        else:
            jwt = authorizer["jwt"]
            assert jwt["claims"]["tenant"] and set(scopes) <= set(jwt["scopes"]), route
            assert set(scopes) <= set(jwt["claims"]["scope"].split()), route

    sqs = SqsModel.model_validate(json.loads((events / "sqs-s3-upload.json").read_text(encoding="utf-8")))
    s3 = S3Model.model_validate(json.loads(sqs.Records[0].body))
    assert s3.Records[0].eventName.startswith("ObjectCreated:")
    assert s3.Records[0].s3.object.key.startswith("uploads/")
    scheduled = EventBridgeModel.model_validate(
        json.loads((events / "schedule-verify.json").read_text(encoding="utf-8"))
    )
    assert scheduled.detail_type == "Scheduled Event"


def test_sam_transform_succeeds_and_its_output_lints_clean(tmp_path: Path, monkeypatch) -> None:
    """The real SAM transform (aws-sam-translator, optional) accepts the template; cfn-lint the result."""
    pytest.importorskip("samtranslator")
    import json

    from cfnlint.api import lint_file
    from samtranslator.translator.transform import transform

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    t = load_template(TEMPLATE)
    for resource in t["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):  # what `sam package` does
            if key in props:
                props[key] = "s3://example-bucket/artifact.zip"

    class NoManagedPolicies:
        def load(self) -> dict[str, str]:
            return {}

    out = transform(
        t, {"JwtIssuer": "https://issuer.example.com/", "JwtAudience": "aud"}, NoManagedPolicies()
    )
    reserved = out["Resources"]["VerifyFunction"]["Properties"]["ReservedConcurrentExecutions"]
    assert reserved["Fn::If"][0] == "ReserveVerifyConcurrency"
    security = out["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]["/v1/packages/{pkg}/log"]["get"]
    assert security["security"] == [{"JwtAuthorizer": [{"Fn::Sub": "${ScopePrefix}log:read"}]}]
    translated = tmp_path / "translated.json"
    translated.write_text(json.dumps(out, default=str), encoding="utf-8")
    assert [m for m in lint_file(translated) if m.rule.id[0] in "EW"] == []


def test_tables_named_for_tests_and_benches_have_the_templates_keys(template: dict[str, Any]) -> None:
    """The log-store-only helper creates exactly what template.yaml declares for each table it names."""
    import boto3
    from moto import mock_aws

    from acx.local.resources import TemplateError, create_tables_named

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
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


def _imported_modules(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_server_module_imports_what_the_layer_leaves_out() -> None:
    """The layer drops acx.cli, acx.client and acx.local: a function that imported one would fail
    on Lambda with ModuleNotFoundError, which no local test (where the whole package is installed)
    would show."""
    build_layer = _build_layer_module()
    left_out = tuple(f"acx.{name}" for name in build_layer.CLIENT_ONLY)
    package = ROOT / "layers" / "acx" / "acx"
    server = [
        p for p in package.rglob("*.py") if p.relative_to(package).parts[0] not in build_layer.CLIENT_ONLY
    ]
    server += list((ROOT / "functions").rglob("*.py"))
    offenders = {
        str(p.relative_to(ROOT)): sorted(m for m in _imported_modules(p) if m.startswith(left_out))
        for p in server
    }
    # `acx.Memory` is read through acx/__init__.py's module __getattr__, which imports acx.client only
    # when a program asks for that name: no function does, so that one import is allowed there alone.
    init = "layers/acx/acx/__init__.py"
    assert offenders.get(init) in ([], ["acx.client"])
    offenders.pop(init, None)
    assert {k: v for k, v in offenders.items() if v} == {}
    # the control: the client side does import them, so the scan reads what it claims to
    assert any(m.startswith("acx.cli") for m in _imported_modules(package / "cli" / "client.py"))


def test_sam_makefile_target_fills_the_layer_with_the_server_side_only(tmp_path: Path) -> None:
    """`sam build` runs `make build-AcxLayer` with ARTIFACTS_DIR set (BuildMethod: makefile)."""
    artifacts = tmp_path / "artifacts"
    result = subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(ROOT / "layers" / "acx" / "Makefile"),
            "build-AcxLayer",
            f"ARTIFACTS_DIR={artifacts}",
            "LAYER_ARGS=--no-install",
            f"PYTHON={sys.executable}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    site = artifacts / "python"
    assert (site / "acx" / "usecases" / "ingest.py").is_file()
    assert (site / "acx" / "core" / "scrub" / "engine.py").is_file()
    assert not [n for n in ("cli", "client", "local") if (site / "acx" / n).exists()]
