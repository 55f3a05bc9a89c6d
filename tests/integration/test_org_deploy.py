"""make org-deploy / org-uninstall: the StackSet's requests, pinned. Organizations and STS answer from moto (who is
calling, which organization); CloudFormation's StackSet calls through botocore's Stubber with each call's exact
request, since moto stores a StackSet but neither checks nor acts on its permission model or auto-deployment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from scripts.org_deploy import (
    CAPABILITIES,
    OPERATION_PREFERENCES,
    OUTLIVES,
    Caller,
    OrgDeployment,
    apply_stackset,
    deploy_steps,
    main,
    read_caller,
)

REGION = "us-east-1"
TEMPLATE_URL = "https://costguard-artifacts-us-east-1.s3.us-east-1.amazonaws.com/costguard/abc123/template.json"


@pytest.fixture
def organization() -> Iterator[dict[str, str]]:
    """A moto organization: its id, the management account, a delegated administrator's account and two units."""
    with mock_aws():
        orgs = boto3.client("organizations", region_name=REGION)
        org = orgs.create_organization(FeatureSet="ALL")["Organization"]
        root = orgs.list_roots()["Roots"][0]["Id"]
        units = [
            orgs.create_organizational_unit(ParentId=root, Name=name)["OrganizationalUnit"]["Id"]
            for name in ("ml", "research")
        ]
        admin = orgs.create_account(Email="platform@example.com", AccountName="platform")["CreateAccountStatus"]
        yield {
            "id": org["Id"],
            "management": org["MasterAccountId"],
            "admin": admin["AccountId"],
            "ml": units[0],
            "research": units[1],
        }


def caller_from(account: str) -> Caller:
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(os.environ, "MOTO_ACCOUNT_ID", account)
        return read_caller(boto3.client("sts", region_name=REGION), boto3.client("organizations", region_name=REGION))


def deployment(units: tuple[str, ...], regions: tuple[str, ...] = ("us-east-1", "eu-west-1")) -> OrgDeployment:
    return OrgDeployment(
        stack_name="costguard",
        stackset_name="costguard-members",
        hub_region=REGION,
        regions=regions,
        units=units,
        bucket_prefix="costguard-artifacts",
        release="costguard/abc123",
        member_parameters={"AlertsChannel": "C0ALERTS", "BudgetAlerts": "false"},
    )


def member_parameters(organization: dict[str, str], hub: str) -> list[dict[str, str]]:
    """No ARN of any member: the organization, the hub's account, region and stack name (the members post to Slack
    through the hub's relay), and the hub's figures queue by the name its stack gives it."""
    return [
        {"ParameterKey": "AlertsChannel", "ParameterValue": "C0ALERTS"},
        {"ParameterKey": "ArtifactBucketPrefix", "ParameterValue": "costguard-artifacts"},
        {"ParameterKey": "ArtifactKeyPrefix", "ParameterValue": "costguard/abc123"},
        {"ParameterKey": "BudgetAlerts", "ParameterValue": "false"},
        {"ParameterKey": "HubAccountId", "ParameterValue": hub},
        {"ParameterKey": "HubFiguresQueueArn", "ParameterValue": f"arn:aws:sqs:us-east-1:{hub}:costguard-figures"},
        {"ParameterKey": "HubRegion", "ParameterValue": "us-east-1"},
        {"ParameterKey": "HubStackName", "ParameterValue": "costguard"},
        {"ParameterKey": "OrganizationId", "ParameterValue": organization["id"]},
    ]


def cloudformation() -> tuple[Any, Stubber]:
    client = boto3.client("cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def no_stackset(stub: Stubber, call_as: str) -> None:
    stub.add_client_error(
        "describe_stack_set",
        service_error_code="StackSetNotFoundException",
        expected_params={"StackSetName": "costguard-members", "CallAs": call_as},
    )


def an_operation(stub: Stubber, call_as: str, operation: str, *statuses: str) -> None:
    for status in statuses:
        stub.add_response(
            "describe_stack_set_operation",
            {"StackSetOperation": {"OperationId": operation, "Status": status}},
            {"StackSetName": "costguard-members", "OperationId": operation, "CallAs": call_as},
        )


def test_management_account_is_told_apart_from_a_delegated_administrator(organization: dict[str, str]) -> None:
    assert caller_from(organization["management"]) == Caller(
        organization["management"], organization["id"], organization["management"]
    )
    assert caller_from(organization["management"]).call_as == "SELF"
    assert caller_from(organization["admin"]).call_as == "DELEGATED_ADMIN"


@pytest.mark.parametrize("who", ["management", "admin"])
def test_first_deploy_creates_a_service_managed_stackset_that_follows_the_chosen_units(
    organization: dict[str, str], who: str
) -> None:
    caller = caller_from(organization[who])
    call_as = {"management": "SELF", "admin": "DELEGATED_ADMIN"}[who]
    units = (organization["ml"], organization["research"])
    client, stub = cloudformation()
    no_stackset(stub, call_as)
    stub.add_response(
        "create_stack_set",
        {"StackSetId": "costguard-members:1"},
        {
            "StackSetName": "costguard-members",
            "Description": f"costguard in every account of {units[0]}, {units[1]} (hub: {organization[who]})",
            "TemplateURL": TEMPLATE_URL,
            "Parameters": member_parameters(organization, organization[who]),
            "Capabilities": ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
            "PermissionModel": "SERVICE_MANAGED",
            "AutoDeployment": {"Enabled": True, "RetainStacksOnAccountRemoval": False},
            "ManagedExecution": {"Active": True},
            "CallAs": call_as,
        },
    )
    stub.add_response(
        "create_stack_instances",
        {"OperationId": "op-1"},
        {
            "StackSetName": "costguard-members",
            "DeploymentTargets": {"OrganizationalUnitIds": list(units)},
            "Regions": ["us-east-1", "eu-west-1"],
            "OperationPreferences": OPERATION_PREFERENCES,
            "CallAs": call_as,
        },
    )
    an_operation(stub, call_as, "op-1", "RUNNING", "SUCCEEDED")
    waits: list[float] = []
    with stub:
        apply_stackset(client, deployment(units), caller, waits.append)
        stub.assert_no_pending_responses()
    assert waits == [15]
    assert CAPABILITIES == ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"]


def test_second_deploy_updates_the_stackset_and_adds_only_the_new_unit_and_region(organization: dict[str, str]) -> None:
    caller = caller_from(organization["admin"])
    ml, research = organization["ml"], organization["research"]
    client, stub = cloudformation()
    stub.add_response(
        "describe_stack_set",
        {"StackSet": {"StackSetName": "costguard-members", "Status": "ACTIVE"}},
        {"StackSetName": "costguard-members", "CallAs": "DELEGATED_ADMIN"},
    )
    stub.add_response(
        "update_stack_set",
        {"OperationId": "op-update"},
        {
            "StackSetName": "costguard-members",
            "Description": f"costguard in every account of {ml}, {research} (hub: {organization['admin']})",
            "TemplateURL": TEMPLATE_URL,
            "Parameters": member_parameters(organization, organization["admin"]),
            "Capabilities": CAPABILITIES,
            "PermissionModel": "SERVICE_MANAGED",
            "AutoDeployment": {"Enabled": True, "RetainStacksOnAccountRemoval": False},
            "OperationPreferences": OPERATION_PREFERENCES,
            "CallAs": "DELEGATED_ADMIN",
        },
    )
    an_operation(stub, "DELEGATED_ADMIN", "op-update", "SUCCEEDED")
    stub.add_response(
        "list_stack_instances",
        {
            "Summaries": [
                {"StackSetId": "s", "Region": "us-east-1", "Account": "111122223333", "OrganizationalUnitId": ml}
            ]
        },
        {"StackSetName": "costguard-members", "CallAs": "DELEGATED_ADMIN"},
    )
    for operation, targets, regions in [
        ("op-unit", [research], ["us-east-1", "eu-west-1"]),
        ("op-region", [ml], ["eu-west-1"]),
    ]:
        stub.add_response(
            "create_stack_instances",
            {"OperationId": operation},
            {
                "StackSetName": "costguard-members",
                "DeploymentTargets": {"OrganizationalUnitIds": targets},
                "Regions": regions,
                "OperationPreferences": OPERATION_PREFERENCES,
                "CallAs": "DELEGATED_ADMIN",
            },
        )
        an_operation(stub, "DELEGATED_ADMIN", operation, "SUCCEEDED")
    with stub:
        apply_stackset(client, deployment((ml, research)), caller, lambda _: None)
        stub.assert_no_pending_responses()


def test_a_failed_stackset_operation_stops_the_deploy_and_says_so(organization: dict[str, str]) -> None:
    caller = caller_from(organization["management"])
    client, stub = cloudformation()
    no_stackset(stub, "SELF")
    stub.add_response("create_stack_set", {"StackSetId": "s"})
    stub.add_response("create_stack_instances", {"OperationId": "op-1"})
    an_operation(stub, "SELF", "op-1", "FAILED")
    with stub, pytest.raises(SystemExit, match="stack instances operation ended FAILED"):
        apply_stackset(client, deployment((organization["ml"],)), caller, lambda _: None)


def uninstall_stubs(stub: Stubber, unit: str) -> None:
    stub.add_response(
        "describe_stack_set",
        {"StackSet": {"StackSetName": "costguard-members", "Status": "ACTIVE"}},
        {"StackSetName": "costguard-members", "CallAs": "SELF"},
    )
    stub.add_response(
        "list_stack_instances",
        {
            "Summaries": [
                {"StackSetId": "s", "Region": r, "Account": "111122223333", "OrganizationalUnitId": unit}
                for r in ("us-east-1", "eu-west-1")
            ]
        },
        {"StackSetName": "costguard-members", "CallAs": "SELF"},
    )


def clients_with(client: Any, organization: dict[str, str]) -> Any:
    def clients(service: str, region: str) -> Any:
        if service == "cloudformation":
            return client
        return boto3.client(service, region_name=region)  # type: ignore[call-overload]

    return clients


def test_org_uninstall_asks_first_and_does_nothing_when_told_no(
    organization: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    client, stub = cloudformation()
    uninstall_stubs(stub, organization["ml"])
    with stub:
        assert main(["uninstall", "--region", REGION], clients_with(client, organization), lambda _: "n") == 1
        stub.assert_no_pending_responses()  # and no delete was sent: the Stubber refuses any call not queued
    out = capsys.readouterr().out
    assert f"the stacks of costguard-members in {organization['ml']}, eu-west-1, us-east-1" in out
    assert "the StackSet costguard-members" in out
    assert all(f"kept: {line}" in out for line in OUTLIVES)
    assert out.rstrip().endswith("Nothing done.")


def test_org_uninstall_with_yes_removes_the_instances_then_the_stackset(organization: dict[str, str]) -> None:
    client, stub = cloudformation()
    uninstall_stubs(stub, organization["ml"])
    stub.add_response(
        "delete_stack_instances",
        {"OperationId": "op-delete"},
        {
            "StackSetName": "costguard-members",
            "DeploymentTargets": {"OrganizationalUnitIds": [organization["ml"]]},
            "Regions": ["eu-west-1", "us-east-1"],
            "RetainStacks": False,
            "OperationPreferences": OPERATION_PREFERENCES,
            "CallAs": "SELF",
        },
    )
    an_operation(stub, "SELF", "op-delete", "SUCCEEDED")
    stub.add_response("delete_stack_set", {}, {"StackSetName": "costguard-members", "CallAs": "SELF"})

    def never_asked(_: str) -> str:
        raise AssertionError("--yes asks nothing")

    with stub:
        assert main(["uninstall", "--region", REGION, "--yes"], clients_with(client, organization), never_asked) == 0
        stub.assert_no_pending_responses()


@pytest.mark.filterwarnings("ignore:Tried to parse AWS")
def test_publish_makes_each_regions_artifact_bucket_for_the_organization_and_puts_the_release_there(
    organization: dict[str, str],
) -> None:
    caller = caller_from(organization["management"])
    chosen = deployment((organization["ml"],))

    def clients(service: str, region: str) -> Any:
        return boto3.client(service, region_name=region)  # type: ignore[call-overload]

    steps = deploy_steps(clients, chosen, caller, b'{"Resources": {}}', {"functions/buttons.zip": b"zip"})
    for step in steps[:2]:
        step.run()
    for region in ("us-east-1", "eu-west-1"):
        s3 = boto3.client("s3", region_name=region)
        bucket = f"costguard-artifacts-{region}"
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
        expected = ["costguard/abc123/functions/buttons.zip"]
        assert sorted(keys) == sorted(expected + ["costguard/abc123/template.json"] * (region == REGION))
        # moto makes no AWS::S3::BucketPolicy from a template: the stack's parameters are what is checked here,
        # the policy's statement by tests/template/test_org_template.py.
        [stack] = boto3.client("cloudformation", region_name=region).describe_stacks(StackName="costguard-artifacts")[
            "Stacks"
        ]
        assert {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]} == {
            "BucketPrefix": "costguard-artifacts",
            "OrganizationId": organization["id"],
        }
    assert [s.says.split(":")[0] for s in steps] == [
        "us-east-1",
        "eu-west-1",
        "us-east-1",
        "the StackSet costguard-members (service-managed, as SELF)",
    ]
