"""`make uninstall` and DefaultHostManagement: the stack's delete resets Systems Manager's Default Host Management
Configuration where costguard turned it on (its custom resource); a region whose setting still names costguard's
role after it (that delete could not reset it) is reset by the uninstall, and a setting naming any other role is
the account's and is left. moto has no service settings: botocore's Stubber pins each request."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.sagemaker.responses import SageMakerResponse

from scripts.uninstall import leftovers
from scripts.uninstall.__main__ import Clients, after_stack, before_stack
from scripts.uninstall.deployment import read_deployment

REGION = "us-east-1"
SETTING = "/ssm/managed-instance/default-ec2-instance-management-role"
STACK = """
Parameters:
  GovernedRegions: {Type: String, Default: ""}
Resources:
  HostManagementRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement: [{Effect: Allow, Principal: {Service: ssm.amazonaws.com}, Action: sts:AssumeRole}]
"""


def found(value: str, status: str = "Customized") -> dict[str, Any]:
    setting = {"SettingId": SETTING, "SettingValue": value, "LastModifiedDate": datetime(2026, 11, 1, tzinfo=UTC)}
    return {"ServiceSetting": {**setting, "Status": status, "LastModifiedUser": "System"}}


def stubbed(region: str) -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name=region)
    stub = Stubber(client)
    stub.activate()
    return client, stub


def test_a_setting_still_naming_costguards_role_is_reset_and_anothers_is_left() -> None:
    ours, ours_stub = stubbed(REGION)
    ours_stub.add_response("get_service_setting", found("costguard-HostManagementRole-1A2B"), {"SettingId": SETTING})
    ours_stub.add_response("reset_service_setting", found("$None", "Default"), {"SettingId": SETTING})
    theirs, theirs_stub = stubbed("eu-west-1")
    theirs_stub.add_response("get_service_setting", found("AccountsOwnRole"), {"SettingId": SETTING})
    unread: list[str] = []

    [step] = leftovers.host_management(ours, REGION, "costguard-HostManagementRole-1A2B", unread)
    assert leftovers.host_management(theirs, "eu-west-1", "costguard-HostManagementRole-1A2B", unread) == []
    step.run()

    assert step.what == (
        f"{REGION}: Default Host Management Configuration naming costguard's role costguard-HostManagementRole-1A2B, "
        "reset to unset"
    )
    assert unread == []
    ours_stub.assert_no_pending_responses()
    theirs_stub.assert_no_pending_responses()


def test_a_setting_that_cannot_be_read_is_said_never_taken_for_nothing_there() -> None:
    client, stub = stubbed(REGION)
    stub.add_client_error("get_service_setting", "AccessDeniedException", "no", 400)
    unread: list[str] = []

    assert leftovers.host_management(client, REGION, "costguard-HostManagementRole-1A2B", unread) == []
    assert unread == [f"{REGION}: Systems Manager get_service_setting: AccessDeniedException"]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setattr(SageMakerResponse, "list_apps", lambda _self: json.dumps({"Apps": []}), raising=False)
    with mock_aws():
        yield


class StubbedSsm(Clients):
    """The uninstall's clients over moto, Systems Manager's the stubbed ones."""

    def __init__(self, ssm: dict[str, Any]) -> None:
        super().__init__(boto3.Session(region_name=REGION))
        self.ssm = ssm

    def __call__(self, service: str, region: str) -> Any:
        return self.ssm[region] if service == "ssm" else super().__call__(service, region)


def test_after_the_stack_the_uninstall_resets_the_regions_its_delete_left_naming_the_stacks_role(aws: None) -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(
        StackName="costguard",
        TemplateBody=STACK,
        Parameters=[{"ParameterKey": "GovernedRegions", "ParameterValue": "us-east-1,eu-west-1"}],
    )
    tagging = boto3.client("resourcegroupstaggingapi", region_name=REGION)
    deployment = read_deployment(cloudformation, tagging, stack_name="costguard", region=REGION)
    role = deployment.host_management_role
    assert role == boto3.client("iam").list_roles()["Roles"][0]["RoleName"]  # the stack's own role, by name
    home, home_stub = stubbed(REGION)
    other, other_stub = stubbed("eu-west-1")
    clients = StubbedSsm({REGION: home, "eu-west-1": other})

    [stack_step] = [s for s in before_stack(clients, deployment).steps if "the stack" in s.what]
    assert stack_step.what.endswith(", and Default Host Management Configuration reset where costguard turned it on")
    assert not [s for s in after_stack(clients, deployment, delete_data=False).steps if "Host Management" in s.what]

    home_stub.add_response("get_service_setting", found("$None", "Default"), {"SettingId": SETTING})  # reset by it
    other_stub.add_response("get_service_setting", found(role), {"SettingId": SETTING})  # its delete could not
    other_stub.add_response("reset_service_setting", found("$None", "Default"), {"SettingId": SETTING})
    gone = dataclasses.replace(deployment, exists=False)
    plan = after_stack(clients, gone, delete_data=False)
    [reset] = [s for s in plan.steps if "Host Management" in s.what]
    reset.run()

    assert reset.what.startswith("eu-west-1: Default Host Management Configuration naming costguard's role ")
    home_stub.assert_no_pending_responses()
    other_stub.assert_no_pending_responses()
