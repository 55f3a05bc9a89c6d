"""DefaultHostManagement through its handler: the custom resource turns on Systems Manager's Default Host Management
Configuration in each governed region where the account has not set it, leaves a setting the account made as it
is (and says so), restores on delete only what it set, and always answers CloudFormation. moto (5.2) has no
service settings: botocore's Stubber pins each request exactly."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.aws.clients import ClientFactory
from costguard.core.settings import Settings
from costguard.runtime import Runtime
from testing.handlers import load_handler

app = load_handler("host_management")
ACCOUNT = "123456789012"
ROLE = "costguard-HostManagementRole-1A2B3C4D5E6F"
STACK = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/costguard/1f2e3d4c-0000-4000-8000-000000000000"
SETTING = "/ssm/managed-instance/default-ec2-instance-management-role"


def arn(region: str) -> str:
    return f"arn:aws:ssm:{region}:{ACCOUNT}:servicesetting{SETTING}"


def request(kind: str, regions: str = "us-east-1,eu-west-1", **extra: Any) -> dict[str, Any]:
    """A CloudFormation request of the stack's custom resource."""
    return {
        "RequestType": kind,
        "ServiceToken": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:costguard-HostManagementFunction-X",
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/answer?sig=1",
        "StackId": STACK,
        "RequestId": "5d4b5a8e-0000-4000-8000-000000000001",
        "LogicalResourceId": "HostManagement",
        "ResourceType": "Custom::DefaultHostManagement",
        "ResourceProperties": {"Regions": regions, "HomeRegion": "us-east-1", "RoleName": ROLE},
        **extra,
    }


def setting(value: str, status: str, region: str) -> dict[str, Any]:
    when = datetime(2026, 11, 1, tzinfo=UTC)
    found = {"SettingId": SETTING, "SettingValue": value, "LastModifiedDate": when, "ARN": arn(region)}
    return {"ServiceSetting": {**found, "LastModifiedUser": "System", "Status": status}}


class Ssm:
    """One stubbed SSM client per region: each request pinned, in order, and nothing else allowed."""

    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.stubs: dict[str, Stubber] = {}

    def __call__(self, region: str) -> Any:
        if region not in self.clients:
            self.clients[region] = boto3.client("ssm", region_name=region)
            self.stubs[region] = Stubber(self.clients[region])
            self.stubs[region].activate()
        return self.clients[region]

    def found(self, region: str, value: str, status: str = "Customized") -> None:
        self(region)
        self.stubs[region].add_response(
            "get_service_setting", setting(value, status, region), {"SettingId": arn(region)}
        )

    def updated(self, region: str, value: str) -> None:
        self.stubs[region].add_response("update_service_setting", {}, {"SettingId": arn(region), "SettingValue": value})

    def reset(self, region: str) -> None:
        self.stubs[region].add_response(
            "reset_service_setting", setting("$None", "Default", region), {"SettingId": arn(region)}
        )

    def refused(self, region: str, operation: str) -> None:
        self(region)
        self.stubs[region].add_client_error(operation, "AccessDeniedException", "not allowed", 400)

    def all_sent(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def ssm() -> Iterator[Ssm]:
    stubbed = Ssm()
    yield stubbed
    stubbed.all_sent()


class StubbedRuntime(Runtime):
    """costguard's runtime, its SSM clients the stubbed ones."""

    def __init__(self, ssm: Ssm) -> None:
        super().__init__(Settings.from_env({"GOVERNED_REGIONS": "us-east-1", **ENV}), ClientFactory())
        self.ssm = ssm

    def client(self, service: str, region: str | None = None, *, quick: bool = False) -> Any:
        assert service == "ssm"
        return self.ssm(region or "us-east-1")


ENV = {"SLACK_SECRET_NAME": "costguard/slack", "ALERTS_CHANNEL": "C0ALERTS", "STATE_TABLE": "costguard-state"}


def run(event: Mapping[str, Any], ssm: Ssm, context: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """The handler over the stubbed clients; what it PUT to CloudFormation's response URL."""
    sent: list[tuple[str, Mapping[str, Any]]] = []
    app.lambda_handler(event, context, runtime=StubbedRuntime(ssm), send=lambda url, body: sent.append((url, body)))
    return sent


def test_create_turns_the_setting_on_with_costguards_role_where_it_is_unset(ssm: Ssm, lambda_context: Any) -> None:
    for region in ("us-east-1", "eu-west-1"):
        ssm.found(region, "$None", "Default")
        ssm.updated(region, ROLE)

    [(url, body)] = run(request("Create"), ssm, lambda_context)

    assert url == request("Create")["ResponseURL"]
    assert body["Status"] == "SUCCESS"
    assert body["PhysicalResourceId"] == "costguard-default-host-management"
    assert body["RequestId"] == request("Create")["RequestId"]
    assert body["Data"]["Said"] == (
        f"us-east-1: turned on, with costguard's role {ROLE}; eu-west-1: turned on, with costguard's role {ROLE}"
    )


def test_create_leaves_a_setting_the_account_made_as_it_is_and_says_so(ssm: Ssm, lambda_context: Any) -> None:
    ssm.found("us-east-1", "service-role/AWSSystemsManagerDefaultEC2InstanceManagementRole")  # read, never updated
    ssm.found("eu-west-1", "$None", "Default")
    ssm.updated("eu-west-1", ROLE)

    [(_, body)] = run(request("Create"), ssm, lambda_context)

    assert body["Status"] == "SUCCESS"
    assert body["Data"]["Said"].startswith(
        "us-east-1: already on, with the account's role "
        "service-role/AWSSystemsManagerDefaultEC2InstanceManagementRole: left as it is; "
    )


def test_empty_governed_regions_mean_the_stacks_own_region(ssm: Ssm, lambda_context: Any) -> None:
    ssm.found("us-east-1", "$None", "Default")
    ssm.updated("us-east-1", ROLE)

    [(_, body)] = run(request("Create", regions=""), ssm, lambda_context)

    assert ssm.clients.keys() == {"us-east-1"}
    assert body["Data"]["Said"] == f"us-east-1: turned on, with costguard's role {ROLE}"


def test_delete_restores_only_what_costguard_set(ssm: Ssm, lambda_context: Any) -> None:
    ssm.found("us-east-1", ROLE)
    ssm.reset("us-east-1")
    ssm.found("eu-west-1", "AccountsOwnRole")  # the account's: costguard left it, and leaves it

    [(_, body)] = run(request("Delete", PhysicalResourceId="costguard-default-host-management"), ssm, lambda_context)

    assert body["Status"] == "SUCCESS"
    assert body["Data"]["Said"] == (
        "us-east-1: reset to unset, as costguard found it; eu-west-1: not costguard's (AccountsOwnRole): left as it is"
    )


def test_a_delete_that_cannot_restore_still_succeeds_and_says_why(ssm: Ssm, lambda_context: Any) -> None:
    ssm.refused("us-east-1", "get_service_setting")
    ssm.found("eu-west-1", ROLE)
    ssm.reset("eu-west-1")

    [(_, body)] = run(request("Delete"), ssm, lambda_context)

    assert body["Status"] == "SUCCESS"  # a stack is never stuck on its delete
    assert body["Data"]["Said"].startswith("us-east-1: not restored (AccessDeniedException); ")


def test_an_update_that_drops_a_region_restores_it_and_a_new_role_replaces_costguards_old_one(
    ssm: Ssm, lambda_context: Any
) -> None:
    old = {"Regions": "us-east-1,eu-west-1", "HomeRegion": "us-east-1", "RoleName": "costguard-OldRole-1"}
    ssm.found("eu-west-1", "costguard-OldRole-1")
    ssm.reset("eu-west-1")
    ssm.found("us-east-1", "costguard-OldRole-1")
    ssm.updated("us-east-1", ROLE)

    [(_, body)] = run(request("Update", regions="us-east-1", OldResourceProperties=old), ssm, lambda_context)

    assert body["Status"] == "SUCCESS"
    assert body["Data"]["Said"] == (
        f"eu-west-1: reset to unset, as costguard found it; us-east-1: turned on, with costguard's role {ROLE}"
    )


def test_a_malformed_request_is_answered_failed_and_never_left_waiting(ssm: Ssm, lambda_context: Any) -> None:
    event = request("Create")
    del event["ResourceProperties"]["RoleName"]

    [(_, body)] = run(event, ssm, lambda_context)

    assert body["Status"] == "FAILED"
    assert body["Reason"].startswith("KeyError")
