"""Slack through the hub, as the template deploys it: the hub's relay takes invocations from principals of its
organization only and holds nothing but the Slack secret; a member (HubRegion set by make org-deploy) is told the
relay's name, may invoke that one function from every function that posts, and reads no Slack secret of its own."""

from __future__ import annotations

from typing import Any

from costguard.core.settings import Settings
from costguard.slack.relay import relay_arn
from scripts.org_deploy import Caller, OrgDeployment, member_parameters
from testing.template import _Resolver, lambda_environment
from tests.template.test_template import as_list

ORG, HUB = "o-a1b2c3d4e5", "123456789012"
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


def test_the_relay_can_be_invoked_by_principals_of_its_organization_only(sam_template: dict[str, Any]) -> None:
    permission = sam_template["Resources"]["SlackRelayOrganizationPermission"]
    assert permission["Condition"] == "IsOrganizationsHub"
    props = permission["Properties"]
    assert props["FunctionName"] == {"Fn::GetAtt": ["SlackRelayFunction", "Arn"]}
    assert (props["Action"], props["Principal"]) == ("lambda:InvokeFunction", "*")
    # Lambda writes PrincipalOrgID as the condition StringEquals aws:PrincipalOrgID in the function's policy.
    assert props["PrincipalOrgID"] == {"Ref": "OrganizationId"}
    assert set(props) == {"FunctionName", "Action", "Principal", "PrincipalOrgID"}


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
