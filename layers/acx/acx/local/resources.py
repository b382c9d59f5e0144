"""template.yaml read as plain data: CloudFormation's short tags (``!Ref``, ``!Sub``...) in their long
form, so the local gateway takes its routes from the template and benches create the log tables the
template declares (never repeated in code).

The whole stack's resources on moto are the tests' business (tests/integration/moto_resources.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CfnLoader", "TemplateError", "create_tables_named", "load_template"]


class TemplateError(ValueError):
    """The file is not a template, or does not declare what the caller names."""


# --------------------------------------------------------------------------- YAML with CFN tags


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short-form tags (!Ref, !Sub, ...) into their long form."""


def _construct(tag: str) -> Callable[[yaml.SafeLoader, yaml.Node], Any]:
    key = "Ref" if tag == "Ref" else ("Condition" if tag == "Condition" else f"Fn::{tag}")

    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if tag == "GetAtt" and isinstance(value, str):
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {key: value}

    return construct


for _tag in (
    "Ref",
    "Condition",
    "Sub",
    "GetAtt",
    "If",
    "Equals",
    "Not",
    "And",
    "Or",
    "Join",
    "Select",
    "Split",
    "FindInMap",
    "GetAZs",
    "ImportValue",
    "Base64",
    "Cidr",
    "Length",
    "ToJsonString",
    "Transform",
):
    CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


def load_template(path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template into plain dicts (short tags become long form)."""
    with Path(path).open(encoding="utf-8") as handle:
        data = yaml.load(handle, Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader subclass
    if not isinstance(data, dict) or "Resources" not in data:
        raise TemplateError(f"{path}: not a CloudFormation template")
    return data


TEMPLATE = Path(__file__).resolve().parents[4] / "template.yaml"  # in the repository, not the layer


def create_tables_named(dynamodb: Any, names: Mapping[str, str], template_path: Path = TEMPLATE) -> None:
    """Create the tables that the template's function environment names, under the names given
    (``{"RECORDS_TABLE": "acx-records", ...}``), with the template's keys and billing mode only: the
    log store alone, for tests and benches, without the rest of the stack."""
    template = load_template(template_path)
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    for variable, name in names.items():
        reference = variables.get(variable)
        logical = reference.get("Ref") if isinstance(reference, dict) else None
        resource = template["Resources"].get(logical) or {}
        if resource.get("Type") != "AWS::DynamoDB::Table":
            raise TemplateError(f"{variable} does not name a DynamoDB table of the template")
        props = resource["Properties"]
        dynamodb.create_table(
            TableName=name,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
        )
