"""The organization's template (make org-template): template.yaml as plain CloudFormation for a service-managed
StackSet. It must be what `sam deploy` would make of template.yaml, but for where the code is read from."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from samtranslator.yaml_helper import yaml_parse

from scripts.translate_template import ARTIFACT_PARAMETERS, organization_template

ROOT = Path(__file__).resolve().parents[2]
NO_VALUE = {"Ref": "AWS::NoValue"}


@pytest.fixture(scope="module")
def org(sam_template: dict[str, Any]) -> dict[str, Any]:
    return organization_template(sam_template)


def _layer_named_plainly(cfn: dict[str, Any]) -> dict[str, Any]:
    """SAM names the layer version after a hash of its location; both templates' layer becomes CostguardLayer."""
    [layer_id] = [k for k, r in cfn["Resources"].items() if r["Type"] == "AWS::Lambda::LayerVersion"]
    return json.loads(json.dumps(cfn).replace(f'"{layer_id}"', '"CostguardLayer"'))  # type: ignore[no-any-return]


def _with_tracing(value: Any, on: bool) -> Any:
    """`value` with every Fn::If on TracingOn decided, and what it made AWS::NoValue dropped."""
    if isinstance(value, dict):
        if list(value) == ["Fn::If"] and value["Fn::If"][0] == "TracingOn":
            return _with_tracing(value["Fn::If"][1 if on else 2], on)
        decided = {k: _with_tracing(v, on) for k, v in value.items()}
        return {k: v for k, v in decided.items() if v != NO_VALUE}
    if isinstance(value, list):
        return [v for v in (_with_tracing(v, on) for v in value) if v != NO_VALUE]
    return value


def _without_code(cfn: dict[str, Any]) -> dict[str, Any]:
    doc = _layer_named_plainly(copy.deepcopy(cfn))
    for resource in doc["Resources"].values():
        resource.get("Properties", {}).pop("Code", None)
        resource.get("Properties", {}).pop("Content", None)
        if resource["Type"] == "AWS::Lambda::Url":
            resource.pop("Metadata", None)
    return doc


def _of_type(cfn: dict[str, Any], *types: str) -> dict[str, Any]:
    return {k: r for k, r in cfn["Resources"].items() if r["Type"] in types}


def test_translated_template_has_no_transform_and_no_serverless_resource(org: dict[str, Any]) -> None:
    assert "Transform" not in org
    assert [k for k, r in org["Resources"].items() if r["Type"].startswith("AWS::Serverless::")] == []


def test_every_function_and_the_layer_read_their_built_folder_from_the_regions_artifact_bucket(
    org: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    bucket = {"Fn::Sub": "${ArtifactBucketPrefix}-${AWS::Region}"}
    functions = {k: r["Properties"]["Code"] for k, r in _of_type(org, "AWS::Lambda::Function").items()}
    sam_functions = {
        k: r["Properties"]["CodeUri"]
        for k, r in sam_template["Resources"].items()
        if r["Type"] == "AWS::Serverless::Function"
    }
    assert functions == {
        k: {"S3Bucket": bucket, "S3Key": {"Fn::Sub": "${ArtifactKeyPrefix}/" + uri.strip("/") + ".zip"}}
        for k, uri in sam_functions.items()
    }
    [layer] = _of_type(org, "AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["Content"] == {
        "S3Bucket": bucket,
        "S3Key": {"Fn::Sub": "${ArtifactKeyPrefix}/layers/costguard.zip"},
    }
    assert all((ROOT / uri).is_dir() for uri in sam_functions.values())


def test_translated_template_is_what_sam_makes_of_template_yaml_but_for_the_code_location(
    org: dict[str, Any], cfn: dict[str, Any]
) -> None:
    """The same functions, events (schedules, rules, queue mappings, permissions), roles and their statements,
    queues and policies, conditions and outputs as `sam deploy` gets with Tracing=Active."""
    mine, sams = _with_tracing(_without_code(org), on=True), _with_tracing(_without_code(cfn), on=True)
    assert sorted(mine["Resources"]) == sorted(sams["Resources"])
    for logical_id, resource in sams["Resources"].items():
        assert mine["Resources"][logical_id] == resource, logical_id
    assert mine["Conditions"] == sams["Conditions"]
    assert mine["Outputs"] == sams["Outputs"]


def test_translated_template_keeps_each_roles_iam_statements(org: dict[str, Any], cfn: dict[str, Any]) -> None:
    def statements(doc: dict[str, Any]) -> dict[str, list[Any]]:
        return {
            k: [s for p in r["Properties"].get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
            for k, r in _of_type(doc, "AWS::IAM::Role").items()
        }

    assert statements(org) == statements(cfn)
    assert sum(len(s) for s in statements(org).values()) > 0


def test_tracing_disabled_in_the_stackset_gives_what_sam_gives_with_tracing_disabled(
    org: dict[str, Any], cfn_untraced: dict[str, Any]
) -> None:
    """SAM decides tracing when it translates; the translated template decides it with the stack's parameter."""
    mine, sams = _with_tracing(_without_code(org), on=False), _with_tracing(_without_code(cfn_untraced), on=False)
    for logical_id, resource in sams["Resources"].items():
        assert mine["Resources"][logical_id] == resource, logical_id
    roles = _of_type(org, "AWS::IAM::Role").values()
    xray = [a for r in roles for a in r["Properties"].get("ManagedPolicyArns", []) if "Xray" in json.dumps(a)]
    assert len(xray) == len(_of_type(org, "AWS::Lambda::Function"))
    assert all(list(a) == ["Fn::If"] and a["Fn::If"][0] == "TracingOn" for a in xray)


def test_parameters_are_the_sam_templates_and_the_artifact_location(
    org: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    assert org["Parameters"] == {**sam_template["Parameters"], **ARTIFACT_PARAMETERS}
    assert set(ARTIFACT_PARAMETERS) == {"ArtifactBucketPrefix", "ArtifactKeyPrefix"}


def test_generated_function_url_carries_why_it_takes_unsigned_requests(org: dict[str, Any]) -> None:
    [url] = _of_type(org, "AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "NONE"
    assert [s["id"] for s in url["Metadata"]["checkov"]["skip"]] == ["CKV_AWS_258"]


def test_artifact_bucket_is_read_by_the_organizations_accounts_only() -> None:
    bucket = yaml_parse((ROOT / "scripts/org/artifact-bucket.yaml").read_text())
    statements = bucket["Resources"]["ArtifactBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    [allow] = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Action"] == "s3:GetObject"
    assert allow["Condition"] == {"StringEquals": {"aws:PrincipalOrgID": {"Ref": "OrganizationId"}}}
    assert bucket["Resources"]["ArtifactBucket"]["Properties"]["BucketName"] == {
        "Fn::Sub": "${BucketPrefix}-${AWS::Region}"
    }
    block = bucket["Resources"]["ArtifactBucket"]["Properties"]["PublicAccessBlockConfiguration"]
    assert all(block.values())
