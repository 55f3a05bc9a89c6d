"""docs/deployer-policy.json, what the person who deploys (and uninstalls) costguard needs, against the template as
CloudFormation sees it: every resource type's handlers (CloudFormation's resource schemas, as cfn-lint ships them)
call only actions the policy allows, and every AWS call `make uninstall` makes is allowed too. A resource added to
the template with no permission to deploy it fails here, not in someone's first deploy."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import cfnlint  # type: ignore[import-untyped]
import pytest

from testing.handlers import ROOT

POLICY = ROOT / "docs" / "deployer-policy.json"
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"

KMS_WHY = "only with KmsKeyArn, on that key: docs/deploying.md names what the person deploying needs on it"
# Actions a resource type's handlers may call for a property costguard's template does not set: not granted.
UNUSED: dict[str, dict[str, str]] = {
    "AWS::DynamoDB::Table": {
        "kms:*": KMS_WHY,
        "kinesis:*": "no KinesisStreamSpecification",
        "iam:CreateServiceLinkedRole": "no replicas",
        "logs:*": "an import's logs: no ImportSourceSpecification",
        "s3:GetObjectMetadata": "an import's source: no ImportSourceSpecification",
        "dynamodb:*TableReplica": "no global table replicas",
        "dynamodb:ImportTable": "no ImportSourceSpecification",
        "dynamodb:DescribeImport": "no ImportSourceSpecification",
        "dynamodb:*KinesisStreamingDestination": "no KinesisStreamSpecification (reading it stays allowed)",
        "dynamodb:*ResourcePolicy": "no ResourcePolicy (reading it stays allowed)",
        "dynamodb:*Item": "the handler writes items only to import or replicate",
        "dynamodb:Query": "the handler reads items only to import or replicate",
    },
    "AWS::Lambda::Function": {
        "ec2:Describe*": "no VpcConfig",
        "elasticfilesystem:*": "no FileSystemConfigs",
        "s3files:*": "no FileSystemConfigs",
        "kms:*": "no KmsKeyArn on the functions: their environment is under Lambda's own key",
        "lambda:AssociateRuntimeAlias": "no runtime alias",
        "lambda:PassCapacityProvider": "no capacity provider",
    },
    "AWS::Logs::LogGroup": {
        "firehose:*": "no log delivery",
        "s3:REST.PUT.OBJECT": "no log delivery (and no IAM action of that name)",
        "logs:CreateLogDelivery": "no log delivery",
        "logs:*DataProtectionPolicy": "no DataProtectionPolicy",
        "logs:*IndexPolicy": "no FieldIndexPolicies (reading them stays allowed)",
        "logs:PutResourcePolicy": "no ResourcePolicyDocument",
        "logs:DeleteResourcePolicy": "no ResourcePolicyDocument",
        "logs:PutBearerTokenAuthentication": "no bearer token authentication",
    },
    "AWS::S3::Bucket": {
        "s3tables:*": "no MetadataTableConfiguration",
        "s3:*BucketMetadata*": "no MetadataTableConfiguration",
        "s3:*BucketAbac": "no attribute-based access control",
        "s3:PutBucketWebsite": "no website (the bucket is private)",
        "s3:PutBucketAcl": "ObjectOwnership BucketOwnerEnforced: no ACLs",
        "s3:PutBucketCORS": "no CORS",
        "s3:PutBucketReplication": "no replication",
        "s3:PutReplicationConfiguration": "no replication",
        "s3:PutBucketNotification": "no notifications",
        "s3:PutBucketLogging": "no access logs (checkov's skip says why)",
        "s3:PutBucketObjectLockConfiguration": "no object lock",
        "s3:PutObjectLockConfiguration": "no object lock",
    },
    "AWS::CloudTrail::Trail": {
        "iam:CreateServiceLinkedRole": "not an organization trail",
        "organizations:*": "not an organization trail",
    },
    "AWS::Budgets::Budget": {"billing:GetBillingViewData": "no BillingViewArn"},
    "AWS::Lambda::EventSourceMapping": {"kms:*": KMS_WHY},
    "AWS::SSM::Association": {"resource-groups:*": "targets a tag, not a resource group"},
    "AWS::IAM::ManagedPolicy": {
        "iam:*GroupPolicy": "attached to roles only",
        "iam:*UserPolicy": "attached to roles only",
    },
}
# What `make uninstall` calls, as boto3 names them, by IAM action where the names differ (S3's).
UNINSTALL_CALLS = [
    "cloudformation:DescribeStacks",
    "ssm:GetServiceSetting",  # Default Host Management Configuration still naming the gone stack's role
    "ssm:ResetServiceSetting",
    "cloudformation:ListStackResources",
    "cloudformation:DeleteStack",
    "tag:GetResources",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:DeleteAlarms",
    "cloudwatch:ListDashboards",
    "cloudwatch:DeleteDashboards",
    "ec2:DescribeTags",
    "ec2:DeleteTags",
    "sagemaker:ListNotebookInstances",
    "sagemaker:ListEndpoints",
    "sagemaker:ListEndpointConfigs",
    "sagemaker:ListApps",
    "sagemaker:DescribeApp",
    "sagemaker:ListTags",
    "sagemaker:DeleteTags",
    "sagemaker:UpdateNotebookInstance",
    "sagemaker:DescribeNotebookInstanceLifecycleConfig",
    "sagemaker:DeleteNotebookInstanceLifecycleConfig",
    "logs:DescribeLogGroups",
    "logs:DeleteLogGroup",
    "dynamodb:Scan",
    "dynamodb:DescribeTable",
    "dynamodb:DeleteTable",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:SetInstanceProtection",
    "s3:ListBucket",  # HeadBucket
    "s3:ListBucketVersions",  # ListObjectVersions
    "s3:DeleteObject",  # DeleteObjects
    "s3:DeleteObjectVersion",
    "s3:DeleteBucket",
]


@cache
def allowed() -> list[str]:
    policy = json.loads(POLICY.read_text())
    patterns: list[str] = []
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"]
        patterns += [actions] if isinstance(actions, str) else actions
    return [p.lower() for p in patterns]


def is_allowed(action: str) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), pattern) for pattern in allowed())


def handler_permissions(resource_type: str) -> Iterator[str]:
    """Every permission CloudFormation's handlers for the type list (create, read, update, delete, list)."""
    index = json.loads((SCHEMAS / "providers" / "us-east-1.json").read_text())
    schema = json.loads((SCHEMAS / "resources" / f"{index[resource_type]}.json").read_text())
    for handler in schema.get("handlers", {}).values():
        yield from handler.get("permissions", [])


def needed(resource_type: str) -> list[str]:
    """The permissions its handlers list, of every service, but those for what costguard's template does not set."""
    if resource_type.startswith("Custom::"):  # CloudFormation invokes the custom resource's function as the deployer
        return ["lambda:InvokeFunction"]
    unused = UNUSED.get(resource_type, {})
    return sorted({p for p in handler_permissions(resource_type) if not any(fnmatch.fnmatchcase(p, u) for u in unused)})


def resource_types(cfn: dict[str, Any]) -> list[str]:
    return sorted({r["Type"] for r in cfn["Resources"].values()})


def test_the_policy_is_a_valid_identity_policy_with_named_statements() -> None:
    policy = json.loads(POLICY.read_text())
    assert policy["Version"] == "2012-10-17"
    sids = [s["Sid"] for s in policy["Statement"]]
    assert len(sids) == len(set(sids))
    for statement in policy["Statement"]:
        assert set(statement) <= {"Sid", "Effect", "Action", "Resource", "Condition"}, statement["Sid"]


def test_every_resource_type_of_the_template_can_be_deployed_updated_and_deleted_with_the_policy(
    cfn: dict[str, Any],
) -> None:
    missing = {t: [p for p in needed(t) if not is_allowed(p)] for t in resource_types(cfn)}
    assert {t: gaps for t, gaps in missing.items() if gaps} == {}, "docs/deployer-policy.json"
    assert "AWS::SSM::Association" in resource_types(cfn), "conditional resources are checked too"


def test_a_resource_type_the_policy_does_not_cover_is_found() -> None:
    assert [p for p in needed("AWS::KMS::Key") if not is_allowed(p)], "kms: nothing in the policy"
    assert "kms:CreateKey" in needed("AWS::KMS::Key")


def test_every_permission_left_out_is_one_a_handler_lists_for_that_type() -> None:
    for resource_type, unused in UNUSED.items():
        listed = list(handler_permissions(resource_type))
        for pattern in unused:
            assert any(fnmatch.fnmatchcase(p, pattern) for p in listed), f"{resource_type}: {pattern} is stale"


@pytest.mark.parametrize("action", UNINSTALL_CALLS)
def test_the_policy_lets_the_same_person_run_make_uninstall(action: str) -> None:
    assert is_allowed(action)


def uninstall_operations() -> set[str]:
    """Every client method the uninstall calls or hands over to be called, and every paginator it walks, from its
    source (`cloudwatch.delete_alarms`, `get_paginator("describe_tags")`)."""
    source = "\n".join(p.read_text() for p in (ROOT / "scripts" / "uninstall").glob("*.py"))
    verbs = "describe|list|get|delete|update|set|scan|head|put|create|tag|untag"
    found = set(re.findall(rf"\b(?!args\.)[a-z_]+\.((?:{verbs})_[a-z_]+)\b", source))
    found |= set(re.findall(r'get_paginator\("([a-z_]+)"\)', source))
    return found - {"get_paginator", "get_waiter"}


def test_every_aws_call_of_the_uninstall_is_in_its_list() -> None:
    named = {a.split(":")[1].lower() for a in UNINSTALL_CALLS}
    s3_names = {"head_bucket", "list_object_versions", "delete_objects"}  # S3's IAM actions have other names
    operations = uninstall_operations()
    assert {"delete_alarms", "describe_tags", "update_notebook_instance", "delete_table"} <= operations
    assert sorted(c for c in operations - s3_names if c.replace("_", "") not in named) == []
