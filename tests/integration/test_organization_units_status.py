"""What the organization's digest says of the chosen units' accounts beyond their weeks: why one has no figures
(its stack failed, with CloudFormation's reason; being deployed; not deployed yet), from ListStackInstances pinned
with Stubber (moto's StackSets keep no service-managed instances); and which accounts of the last digest have gone
(left the organization: DescribeAccount answers AccountNotFoundException in moto's Organizations; moved out of the
units), each removed with one line."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.digest.handoff import AccountWeek
from costguard.digest.organization.rules import OrganizationWeek, organization_message
from costguard.digest.organization.stacksets import why_not_reporting
from costguard.digest.organization.units import ROSTER, accounts_of_units, remember
from costguard.state.handoffs import HandedWeeks
from testing.template import create_state_table
from tests.integration.conftest import REGION, TABLE
from tests.integration.test_organization_accounts import units_of_the_organization

HUB = "123456789012"
NOW = datetime(2026, 11, 23, 11, tzinfo=UTC)
GONE = "999988887777"  # an account the last digest covered that is no longer in the organization


def instance(account: str, status: str, detailed: str, reason: str = "", region: str = "eu-west-1") -> dict[str, Any]:
    return {
        "StackSetId": "costguard-members:e5f54eea-d041-44ad-94f8-b8268aca1e59",
        "Region": region,
        "Account": account,
        "StackId": f"arn:aws:cloudformation:{region}:{account}:stack/StackSet-costguard-members-1/0b1c2d3e",
        "Status": status,
        "StatusReason": reason,
        "StackInstanceStatus": {"DetailedStatus": detailed},
    }


@pytest.fixture
def kept(aws: None) -> HandedWeeks:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_state_table(dynamodb, TABLE)
    return HandedWeeks(dynamodb, TABLE)


def cloudformation_answering(summaries: list[dict[str, Any]], *, refuse_self: bool = False) -> tuple[Any, Stubber]:
    client = boto3.client("cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    if refuse_self:
        stub.add_client_error(
            "list_stack_instances",
            "ValidationError",
            expected_params={"StackSetName": "costguard-members", "CallAs": "SELF"},
        )
    call_as = "DELEGATED_ADMIN" if refuse_self else "SELF"
    stub.add_response(
        "list_stack_instances",
        {"Summaries": summaries},
        expected_params={"StackSetName": "costguard-members", "CallAs": call_as},
    )
    return client, stub


def test_the_digest_says_why_each_unit_account_has_no_figures(kept: HandedWeeks) -> None:
    org = units_of_the_organization()
    reason = "ResourceLogicalId:StateTable, ResourceStatusReason:Access denied for operation 'CreateTable'."
    client, stub = cloudformation_answering([instance(org["sandbox"], "OUTDATED", "FAILED", reason)])
    with stub:
        found = accounts_of_units(
            [HUB],
            boto3.client("organizations", region_name=REGION),
            client,
            kept,
            units=[org["ml"]],
            stack_set="costguard-members",
        )
    stub.assert_no_pending_responses()
    assert found.expected == [HUB, org["sandbox"], org["research"]]
    # the hub's own account (not in the units) has no stack instance: nothing is said of it
    assert found.why == {
        org["sandbox"]: f"its stack in eu-west-1 failed: {reason}",
        org["research"]: "costguard is not deployed there yet (the StackSet has no stack in it)",
    }
    week = OrganizationWeek(now=NOW, expected=found.expected, reported={}, why=found.why)
    text = json.dumps(organization_message(week).slack_blocks())
    assert f"`{org['sandbox']}`: never reported: its stack in eu-west-1 failed: ResourceLogicalId" in text
    assert f"`{org['research']}`: never reported: costguard is not deployed there yet" in text


def test_a_delegated_administrators_hub_reads_the_instances_as_one(kept: HandedWeeks) -> None:
    org = units_of_the_organization()
    client, stub = cloudformation_answering([instance(org["sandbox"], "CURRENT", "SUCCEEDED")], refuse_self=True)
    with stub:
        found = accounts_of_units(
            [],
            boto3.client("organizations", region_name=REGION),
            client,
            kept,
            units=[org["ml"]],
            stack_set="costguard-members",
        )
    stub.assert_no_pending_responses()
    assert org["sandbox"] not in found.why, "deployed and current: its own digest did not hand its week over"


def test_stack_instances_being_deployed_or_failed_are_told_apart() -> None:
    instances = [
        instance("111111111111", "OUTDATED", "RUNNING"),
        instance("222222222222", "INOPERABLE", "INOPERABLE", "DeleteStackInstances left it"),
        instance("333333333333", "CURRENT", "SUCCEEDED", region="us-east-1"),
        instance("333333333333", "OUTDATED", "FAILED", "no room", region="eu-west-1"),
    ]
    why = why_not_reporting(instances, ["111111111111", "222222222222", "333333333333"])
    assert why == {
        "111111111111": "its stack in eu-west-1 is being deployed",
        "222222222222": "its stack in eu-west-1 failed: DeleteStackInstances left it",
        "333333333333": "its stack in eu-west-1 failed: no room",
    }


def test_an_account_that_left_the_organization_is_removed_with_one_line(kept: HandedWeeks) -> None:
    org = units_of_the_organization()
    remember(kept, [HUB, org["sandbox"], org["finance"], GONE], NOW - timedelta(days=7))
    client, stub = cloudformation_answering([])
    with stub:
        found = accounts_of_units(
            [HUB],
            boto3.client("organizations", region_name=REGION),
            client,
            kept,
            units=[org["ml"]],
            stack_set="costguard-members",
        )
    assert (found.left, found.moved) == ([GONE], [org["finance"]])
    assert GONE not in found.expected

    week = OrganizationWeek(now=NOW, expected=found.expected, reported={}, left=found.left, moved=found.moved)
    blocks = organization_message(week).slack_blocks()
    [line] = [b for b in blocks if GONE in json.dumps(b)]
    moved = f"`{org['finance']}` is no longer in the chosen units"
    assert line["elements"][0]["text"] == f"`{GONE}` left the organization; {moved}: removed from this digest."
    assert sum(GONE in json.dumps(b) for b in blocks) == 1, "named once, in that line, not as not reporting"


def test_the_accounts_a_digest_covered_are_kept_for_the_next(kept: HandedWeeks) -> None:
    remember(kept, [HUB, "111122223333"], NOW)
    assert json.loads(kept.latest([ROSTER])[ROSTER]) == [HUB, "111122223333"]


def test_accounts_reporting_no_gpu_machines_are_named_in_one_line() -> None:
    def week(account: str, name: str, machines: int) -> AccountWeek:
        return AccountWeek(
            account=account,
            label=name,
            start=NOW - timedelta(days=7),
            end=NOW - timedelta(hours=1),
            regions=("eu-west-1",),
            machines=machines,
            gpu_hours=10.0 * machines,
            idle_gpu_hours=4.0 * machines,
            waste_usd=8.0 * machines,
            avg_gpu_util=None,
            warned=0,
            stopped=0,
            kept=0,
            saved_hours=0.0,
            saved_usd=0.0,
            spend_usd=None,
            days=(),
            top_owners=(),
            gaps=(),
        )

    weeks = {"111111111111": week("111111111111", "training", 2), "222222222222": week("222222222222", "sandbox", 0)}
    weeks["333333333333"] = dataclasses.replace(week("333333333333", "research", 0), stopped=1, saved_usd=40.0)
    text = json.dumps(organization_message(OrganizationWeek(NOW, list(weeks), weeks)).slack_blocks())
    assert "*3 of 3 accounts* reported" in text
    assert "*research (333333333333)*: 0 machines" in text, "its machine stopped all week: its saving is shown"
    assert "*training (111111111111)*: 2 machines" in text
    assert "Reporting, no GPU machines this week: sandbox (222222222222)." in text
    assert "*sandbox (222222222222)*" not in text
