"""Trust by organization (OrganizationId): the hub and its members find each other by names derived from the hub's
account and stack name, and trust principals of their organization, not lists of ARNs. The IAM conditions are
evaluated here as IAM would for a request from this organization and from another one."""

from __future__ import annotations

import fnmatch
import itertools
from typing import Any

import pytest

from scripts.org_deploy import Caller, OrgDeployment, figures_queue_arn
from testing.template import _Resolver

ORG, OTHER_ORG, HUB = "o-a1b2c3d4e5", "o-zz9y8x7w6v", "123456789012"


def _resolve(node: Any, parameters: dict[str, str]) -> Any:
    """A policy's condition block with its Refs and Splits made values, as IAM receives it."""
    if isinstance(node, dict):
        if list(node) == ["Ref"]:
            return parameters[node["Ref"]]
        if list(node) == ["Fn::Split"]:
            sep, value = node["Fn::Split"]
            return _resolve(value, parameters).split(sep)
        return {k: _resolve(v, parameters) for k, v in node.items()}
    return node


def allows(condition: dict[str, Any], request: dict[str, Any]) -> bool:
    """IAM's StringEquals and ForAnyValue:StringLike over the request's context keys (all must hold)."""
    for operator, keys in condition.items():
        for key, values in keys.items():
            wanted = values if isinstance(values, list) else [values]
            have = request.get(key)
            have = have if isinstance(have, list) else [] if have is None else [have]
            if operator == "StringEquals":
                ok = len(have) == 1 and have[0] in wanted
            elif operator == "ForAnyValue:StringLike":
                ok = any(fnmatch.fnmatchcase(h, w) for h in have for w in wanted)
            else:
                raise AssertionError(f"an operator this test does not evaluate: {operator}")
            if not ok:
                return False
    return True


def figures_condition(cfn: dict[str, Any], paths: str) -> dict[str, Any]:
    [statement, by_hand] = cfn["Resources"]["FiguresQueueOrganizationPolicy"]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    assert by_hand["Fn::If"][0] == "HasMemberDigestRoles"  # accounts outside the organization, by hand as before
    assert statement["Principal"] == {"AWS": "*"}
    assert statement["Action"] == "sqs:SendMessage"
    condition: str = statement["Condition"]["Fn::If"][0]
    has_paths: dict[str, Any] = statement["Condition"]["Fn::If"][1]
    whole: dict[str, Any] = statement["Condition"]["Fn::If"][2]
    assert condition == "HasOrganizationPaths"
    chosen = has_paths if paths else whole
    return _resolve(chosen, {"OrganizationId": ORG, "OrganizationPaths": paths})  # type: ignore[no-any-return]


def test_the_hubs_figures_queue_refuses_a_principal_from_another_organization(cfn: dict[str, Any]) -> None:
    condition = figures_condition(cfn, "")
    assert allows(condition, {"aws:PrincipalOrgID": ORG})
    assert not allows(condition, {"aws:PrincipalOrgID": OTHER_ORG})
    assert not allows(condition, {})  # a principal of no organization


def test_organization_paths_narrow_the_figures_queue_to_the_chosen_units(cfn: dict[str, Any]) -> None:
    chosen = f"{ORG}/r-ab12/ou-ab12-11111111/*"
    condition = figures_condition(cfn, chosen)
    inside = {"aws:PrincipalOrgID": ORG, "aws:PrincipalOrgPaths": [f"{ORG}/r-ab12/ou-ab12-11111111/"]}
    elsewhere = {"aws:PrincipalOrgID": ORG, "aws:PrincipalOrgPaths": [f"{ORG}/r-ab12/ou-ab12-22222222/"]}
    assert allows(condition, inside)
    assert not allows(condition, elsewhere)
    assert not allows(condition, {**inside, "aws:PrincipalOrgID": OTHER_ORG})


def test_a_members_click_queue_takes_clicks_from_the_hubs_account_while_it_is_in_the_organization(
    cfn: dict[str, Any],
) -> None:
    policy = cfn["Resources"]["ClickQueueOrganizationPolicy"]
    assert policy["Condition"] == "OrganizationMemberClicks"
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${HubAccountId}:root"}}
    assert statement["Resource"] == {"Fn::GetAtt": ["ClickQueue", "Arn"]}
    condition = _resolve(statement["Condition"], {"OrganizationId": ORG})
    assert allows(condition, {"aws:PrincipalOrgID": ORG})
    assert not allows(condition, {"aws:PrincipalOrgID": OTHER_ORG})
    name = cfn["Resources"]["ClickQueue"]["Properties"]["QueueName"]
    assert name == {"Fn::If": ["IsOrganizationMember", {"Fn::Sub": "${HubStackName}-clicks"}, {"Ref": "AWS::NoValue"}]}


def test_the_hubs_receiver_sends_only_to_the_derived_queue_name_in_its_organizations_accounts(
    cfn: dict[str, Any],
) -> None:
    statements = cfn["Resources"]["SlackReceiverFunctionRole"]["Properties"]["Policies"][0]["PolicyDocument"][
        "Statement"
    ]
    [route] = [s["Fn::If"][1] for s in statements if "Fn::If" in s and s["Fn::If"][0] == "RoutesClicksInOrganization"]
    assert route["Action"] == "sqs:SendMessage"
    assert route["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:sqs:*:*:${AWS::StackName}-clicks"}
    condition = _resolve(route["Condition"], {"OrganizationId": ORG})
    assert allows(condition, {"aws:ResourceOrgID": ORG})
    assert not allows(condition, {"aws:ResourceOrgID": OTHER_ORG})
    env = cfn["Resources"]["SlackReceiverFunction"]["Properties"]["Environment"]["Variables"]
    assert env["MEMBER_CLICK_QUEUE_NAME"] == {
        "Fn::If": ["RoutesClicksInOrganization", {"Fn::Sub": "${AWS::StackName}-clicks"}, ""]
    }


def test_org_deploy_gives_members_the_figures_queue_name_the_hubs_stack_gives_it(cfn: dict[str, Any]) -> None:
    name = cfn["Resources"]["FiguresQueue"]["Properties"]["QueueName"]
    assert name == {"Fn::If": ["IsOrganizationsHub", {"Fn::Sub": "${AWS::StackName}-figures"}, {"Ref": "AWS::NoValue"}]}
    chosen = OrgDeployment("acme-costguard", "members", "eu-west-1", ("eu-west-1",), ("ou-ab12-11111111",), "b", "r")
    assert figures_queue_arn(chosen, Caller(HUB, ORG, HUB)) == f"arn:aws:sqs:eu-west-1:{HUB}:acme-costguard-figures"
    env = cfn["Resources"]["OrganizationDigestFunction"]["Properties"]["Environment"]["Variables"]
    assert env["ORGANIZATION_ID"] == {"Ref": "OrganizationId"}


@pytest.mark.parametrize(
    ("organization", "hub_account", "receiver_role", "digest_roles"),
    list(itertools.product(["", ORG], ["", HUB], ["", "arn:aws:iam::123456789012:role/r"], ["", "arn:r"])),
)
def test_each_queue_has_at_most_one_policy_and_the_by_hand_path_is_unchanged_outside_an_organization(
    sam_template: dict[str, Any], organization: str, hub_account: str, receiver_role: str, digest_roles: str
) -> None:
    parameters = {
        "AlertsChannel": "C0ALERTS",
        "OrganizationId": organization,
        "HubAccountId": hub_account,
        "HubReceiverRoleArn": receiver_role,
        "MemberDigestRoles": digest_roles,
    }
    resolver = _Resolver(sam_template, parameters, {})
    present = {
        name
        for name, r in sam_template["Resources"].items()
        if r["Type"] == "AWS::SQS::QueuePolicy"
        and ("Condition" not in r or resolver.condition({"Condition": r["Condition"]}))
    }
    on_click_queue = present & {"ClickQueueHubPolicy", "ClickQueueOrganizationPolicy"}
    on_figures_queue = present & {"FiguresQueueMembersPolicy", "FiguresQueueOrganizationPolicy"}
    assert len(on_click_queue) <= 1
    assert len(on_figures_queue) <= 1
    if not organization:  # outside an organization: exactly the by-hand policies of before
        assert on_click_queue == ({"ClickQueueHubPolicy"} if receiver_role else set())
        assert on_figures_queue == ({"FiguresQueueMembersPolicy"} if digest_roles else set())
    elif not hub_account:  # the organization's hub: its figures queue trusts the organization
        assert on_figures_queue == {"FiguresQueueOrganizationPolicy"}
    elif not receiver_role:  # a member of the organization: its click queue trusts the hub's account in it
        assert on_click_queue == {"ClickQueueOrganizationPolicy"}
