"""Slack through the hub, as the template deploys it: the hub's relay takes invocations from principals of its
organization only and holds nothing but the Slack secret; a member (HubRegion set by make org-deploy) is told the
relay's name, may invoke that one function from every function that posts, and reads no Slack secret of its own."""

from __future__ import annotations

import fnmatch
from typing import Any

from costguard.core.settings import Settings
from costguard.slack.relay import relay_arn
from scripts.org_deploy import Caller, OrgDeployment, member_parameters
from testing.template import _Resolver, lambda_environment, template
from tests.template.test_template import as_list

ORG, HUB, MEMBER = "o-a1b2c3d4e5", "123456789012", "111122223333"
RELAY = relay_arn("aws", "us-east-1", HUB, "costguard")
MEMBER_UNIT = f"{ORG}/r-ab12/ou-ab12-11111111/"  # the member account's aws:PrincipalOrgPaths
POSTING = {
    "IdleStopperFunction",
    "ButtonsFunction",
    "SageMakerStopperFunction",
    "BudgetAlertsFunction",
    "CommitmentTrackerFunction",
    "WeeklyDigestFunction",
    "DeepDiveFunction",
    "OwnerTaggerFunction",
}
RELAY_BY_NAME = "arn:${AWS::Partition}:lambda:${HubRegion}:${HubAccountId}:function:${HubStackName}-slack-relay"
DEPLOYMENT = OrgDeployment(
    stack_name="costguard",
    stackset_name="costguard-members",
    hub_region="eu-central-1",
    regions=("eu-west-1",),
    units=("ou-ab12-cdef3456",),
    bucket_prefix="costguard-artifacts",
    release="costguard/abc123",
    member_parameters={"AlertsChannel": "C0ALERTS"},
)
CALLER = Caller(account=HUB, organization_id=ORG, management_account=HUB)


def member_env(function: str) -> dict[str, str]:
    return lambda_environment(function, member_parameters(DEPLOYMENT, CALLER), {"StateTable": "costguard-state"})


def statements_of(cfn: dict[str, Any], role: str) -> list[dict[str, Any]]:
    found = []
    for policy in cfn["Resources"][role]["Properties"].get("Policies", []):
        found += as_list(policy["PolicyDocument"]["Statement"])
    return found


def test_a_member_made_by_make_org_deploy_posts_through_the_relay_its_hub_stack_names() -> None:
    env = member_env("idle_stopper")
    expected = relay_arn("aws", "eu-central-1", HUB, "costguard")
    assert env["SLACK_RELAY_ARN"] == expected
    assert Settings.from_env({**env, "AWS_REGION": "eu-west-1"}).slack_relay_arn == expected


def test_the_hub_and_a_member_by_hand_read_their_own_slack_secret() -> None:
    for parameters in ({"OrganizationId": ORG}, {}):
        env = lambda_environment("idle_stopper", {"AlertsChannel": "C0ALERTS", **parameters}, {"StateTable": "t"})
        assert env["SLACK_RELAY_ARN"] == ""


def test_the_relay_is_named_as_members_derive_it_and_exists_at_the_organizations_hub_only(
    sam_template: dict[str, Any],
) -> None:
    relay = sam_template["Resources"]["SlackRelayFunction"]
    assert relay["Condition"] == "IsOrganizationsHub"
    assert relay["Properties"]["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-slack-relay"}
    assert "FunctionUrlConfig" not in relay["Properties"]
    assert "Events" not in relay["Properties"]
    at = _Resolver(sam_template, {"OrganizationId": ORG, "HubAccountId": HUB, "HubRegion": "eu-central-1"}, {})
    assert not at.condition({"Condition": "IsOrganizationsHub"})
    assert at.condition({"Condition": "PostsThroughHub"})


def relay_may_be_invoked_by(sam_template: dict[str, Any], principal_arn: str, org: str, paths: str = "") -> bool:
    """The relay's resource policy at a hub stack `costguard` deployed with OrganizationPaths `paths`, evaluated as
    IAM would for a principal of `org` whose account is in MEMBER_UNIT: StringEquals, ArnLike and StringLike (whose
    wildcards match across `/`)."""
    hub = {"OrganizationId": ORG, "OrganizationPaths": paths, "AWS::StackName": "costguard"}
    at = _Resolver(sam_template, hub, {"SlackRelayFunction.Arn": RELAY})
    policy = sam_template["Resources"]["SlackRelayMemberPolicy"]
    assert policy["Properties"]["ResourceArn"] == {"Fn::GetAtt": ["SlackRelayFunction", "Arn"]}
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (statement["Effect"], statement["Principal"], statement["Action"]) == (
        "Allow",
        {"AWS": "*"},
        "lambda:InvokeFunction",
    )
    assert at.value(statement["Resource"]) == RELAY
    condition, yes, no = statement["Condition"]["Fn::If"]
    context = {"aws:PrincipalOrgID": [org], "aws:PrincipalArn": [principal_arn], "aws:PrincipalOrgPaths": [MEMBER_UNIT]}
    for operator, keys in (yes if at.condition({"Condition": condition}) else no).items():
        for key, wanted in keys.items():
            patterns = [p.strip() for p in paths.split(",")] if "Fn::Split" in wanted else [at.value(wanted)]
            match = fnmatch.fnmatchcase if operator != "StringEquals" else str.__eq__
            if not any(match(value, p) for value in context[key] for p in patterns):
                return False
    return True


def member_role_arn(account: str, logical_id: str) -> str:
    """A member function's role as the StackSet's stack names it: a generated name, under its Globals' RolePath."""
    sam = template()
    path = _Resolver(sam, member_parameters(DEPLOYMENT, CALLER), {}).value(sam["Globals"]["Function"]["RolePath"])
    return f"arn:aws:iam::{account}:role{path}StackSet-costguard-members-1f2e3d4c-{logical_id}Role-AbC123dEf456"


def test_the_relay_is_invoked_by_the_member_stacks_function_roles_of_its_organization(
    sam_template: dict[str, Any],
) -> None:
    assert relay_may_be_invoked_by(sam_template, member_role_arn(MEMBER, "IdleStopperFunction"), ORG)
    assert relay_may_be_invoked_by(sam_template, member_role_arn("210987654321", "ButtonsFunction"), ORG)


def test_no_other_principal_of_the_organization_may_invoke_the_relay(sam_template: dict[str, Any]) -> None:
    for other in (
        f"arn:aws:iam::{MEMBER}:role/Admin",
        f"arn:aws:iam::{MEMBER}:role/costguard-IdleStopperFunctionRole-AbC123",  # a stack by hand, root path
        f"arn:aws:iam::{MEMBER}:user/costguard-member/alice",
        f"arn:aws:iam::{MEMBER}:role/other-member/StackSet-x-IdleStopperFunctionRole-AbC123",  # another hub's
    ):
        assert not relay_may_be_invoked_by(sam_template, other, ORG), other
    assert not relay_may_be_invoked_by(sam_template, member_role_arn(MEMBER, "IdleStopperFunction"), "o-zzzzzzzzzz")


def test_with_organization_paths_the_relay_admits_member_roles_under_those_paths_only(
    sam_template: dict[str, Any],
) -> None:
    role = member_role_arn(MEMBER, "IdleStopperFunction")
    assert relay_may_be_invoked_by(sam_template, role, ORG, paths=f"{MEMBER_UNIT}*")
    assert not relay_may_be_invoked_by(sam_template, role, ORG, paths=f"{ORG}/r-ab12/ou-ab12-22222222/*")


def test_every_function_role_of_a_member_stack_lives_under_the_path_the_relay_admits(cfn: dict[str, Any]) -> None:
    function_roles = [
        resource["Properties"]["Role"]["Fn::GetAtt"][0]
        for resource in cfn["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    ]
    assert len(function_roles) > len(POSTING)
    function_roles.remove("SlackRelayFunctionRole")  # the hub's, never in a member
    assert cfn["Resources"]["SlackRelayFunctionRole"]["Properties"]["Path"] == "/"
    for role in function_roles:
        assert cfn["Resources"][role]["Properties"]["Path"] == {
            "Fn::If": ["PostsThroughHub", {"Fn::Sub": "/${HubStackName}-member/"}, {"Ref": "AWS::NoValue"}]
        }, role


def test_the_relays_concurrency_is_bounded_where_the_hub_can_reserve_any(sam_template: dict[str, Any]) -> None:
    relay = sam_template["Resources"]["SlackRelayFunction"]["Properties"]
    assert relay["ReservedConcurrentExecutions"] == {"Fn::If": ["HasReceiverConcurrency", 10, {"Ref": "AWS::NoValue"}]}
    assert "SlackRelayOrganizationPermission" not in sam_template["Resources"]  # one policy, the one above


def test_the_relay_holds_the_slack_secret_and_nothing_else(cfn: dict[str, Any]) -> None:
    role = cfn["Resources"]["SlackRelayFunctionRole"]["Properties"]
    assert [(s["Action"], s["Resource"]) for s in statements_of(cfn, "SlackRelayFunctionRole")] == [
        ("sqs:SendMessage", {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}),  # SAM's, for DeadLetterQueue
        (
            "secretsmanager:GetSecretValue",
            {
                "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}"
                ":secret:${SlackSecretName}-??????"
            },
        ),
    ]
    assert [a.rsplit("/", 1)[1] for a in role["ManagedPolicyArns"]] == [
        "AWSLambdaBasicExecutionRole",
        "AWSXrayWriteOnlyAccess",
    ]


def test_every_function_that_posts_may_invoke_the_hubs_relay_and_no_other_function(cfn: dict[str, Any]) -> None:
    invoking = {}
    for function, resource in cfn["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        name = f"{function}Role"
        for statement in statements_of(cfn, name):
            if "Fn::If" in statement and statement["Fn::If"][1].get("Sid") == "PostThroughTheHub":
                condition, grant, otherwise = statement["Fn::If"]
                assert (condition, otherwise) == ("PostsThroughHub", {"Ref": "AWS::NoValue"})
                invoking[name.removesuffix("Role")] = grant
            else:
                assert "lambda:InvokeFunction" not in as_list(statement.get("Action", [])), name
    assert set(invoking) == POSTING
    for grant in invoking.values():
        assert grant["Action"] == "lambda:InvokeFunction"
        assert grant["Resource"]["Fn::Sub"] == RELAY_BY_NAME
