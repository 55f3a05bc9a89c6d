"""The hub's rule for the members' StackSet failures: CloudFormation's event for a failed instance of that
StackSet, administered from the hub's account and region, matches; a success, another StackSet's failure, or
another account's, does not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scripts.org_deploy import Caller, OrgDeployment, hub_parameters
from testing.handlers import load_event
from tests.template.test_template import matches_pattern, rule_patterns

FAILED: dict[str, Any] = load_event("organization_digest/stackset-failed.json")


def resolved(cfn: dict[str, Any]) -> dict[str, Any]:
    """The rule's pattern as deployed in 123456789012, us-east-1, with MembersStackSetName's default."""
    pattern = copy.deepcopy(rule_patterns(cfn)["OrganizationDigestFunctionStackSetFailed"])
    [prefix] = pattern["detail"]["stack-set-arn"]
    prefix["prefix"] = (
        prefix["prefix"]["Fn::Sub"]
        .replace("${AWS::Partition}", "aws")
        .replace("${AWS::Region}", "us-east-1")
        .replace("${AWS::AccountId}", "123456789012")
        .replace("${MembersStackSetName}", "costguard-members")
    )
    return pattern


def changed(path: list[str], value: Any) -> dict[str, Any]:
    event = copy.deepcopy(FAILED)
    node: dict[str, Any] = event
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return event


ARN = "arn:aws:cloudformation:us-east-1:{}:stackset/{}:e5f54eea-d041-44ad-94f8-b8268aca1e59"


@pytest.mark.parametrize(
    ("event", "matches"),
    [
        (FAILED, True),
        (changed(["detail", "status-details", "detailed-status"], "INOPERABLE"), True),
        (changed(["detail", "status-details", "detailed-status"], "SUCCEEDED"), False),
        (changed(["detail", "status-details", "detailed-status"], "CANCELLED"), False),
        (changed(["detail", "stack-set-arn"], ARN.format("123456789012", "another-stackset")), False),
        (changed(["detail", "stack-set-arn"], ARN.format("123456789012", "costguard-members-old")), False),
        (changed(["detail", "stack-set-arn"], ARN.format("999999999999", "costguard-members")), False),
        (changed(["detail-type"], "CloudFormation StackSet Operation Status Change"), False),
    ],
)
def test_the_rule_passes_on_the_failures_of_the_members_stackset_only(
    cfn: dict[str, Any], event: dict[str, Any], matches: bool
) -> None:
    assert matches_pattern(resolved(cfn), event) is matches


def test_make_org_deploy_names_its_stackset_to_the_hub() -> None:
    deployment = OrgDeployment(
        stack_name="costguard",
        stackset_name="gpu-governance",
        hub_region="us-east-1",
        regions=("eu-west-1",),
        units=("ou-ab12-cdef3456",),
        bucket_prefix="costguard-artifacts",
        release="costguard/abc123",
    )
    caller = Caller(account="123456789012", organization_id="o-a1b2c3d4e5", management_account="123456789012")
    assert hub_parameters(deployment, caller)["MembersStackSetName"] == "gpu-governance"
