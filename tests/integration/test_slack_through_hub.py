"""Slack through the hub (an organization's member, HubRegion set by make org-deploy): the member holds no Slack
secret; its idle stopper's warning reaches its owner in Slack through the hub's relay, which holds the one bot token.

moto serves both accounts (the member's through STS AssumeRole credentials). moto's Lambda cannot run a Python
function without Docker, so the member's Lambda client here is a stand-in that checks each invocation's request (the
relay's ARN, synchronous) and runs the hub's real slack_relay handler with the hub's runtime, as Lambda would;
`tests/template/test_slack_relay_template.py` checks what lets the member invoke it in AWS, and no one else.
"""

from __future__ import annotations

import dataclasses
import io
import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.aws.clients import ClientFactory
from costguard.core import formatting, tags
from costguard.core.settings import IdlePolicy
from costguard.runtime import Runtime
from costguard.slack.relay import relay_arn
from testing import moto_fixes
from testing.handlers import LambdaContext, load_handler
from testing.slack_standin import SlackStandIn
from testing.template import create_state_table
from tests.integration.conftest import MEMBER, MEMBER_REGION, REGION, TABLE, make_runtime, run_instance

HUB = "123456789012"
RELAY = relay_arn("aws", REGION, HUB, "costguard")
idle_stopper = load_handler("idle_stopper")
slack_relay = load_handler("slack_relay")
A10G = [{"Name": "name", "Value": "NVIDIA A10G"}, {"Name": "arch", "Value": "Ampere"}]


class MemberSweepContext(LambdaContext):
    invoked_function_arn = f"arn:aws:lambda:{MEMBER_REGION}:{MEMBER}:function:costguard-idle-stopper"


class HubLambda:
    """The member's Lambda client: each invocation must be a synchronous one of the hub's relay; it runs the hub's
    handler. `lose`: the answers of the next calls of these methods are lost after the relay made them."""

    def __init__(self, hub: Runtime) -> None:
        self.hub = hub
        self.methods: list[str] = []
        self.lose: list[str] = []

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        assert (FunctionName, InvocationType) == (RELAY, "RequestResponse")
        request = json.loads(Payload)
        self.methods.append(request["method"])
        answer = slack_relay.lambda_handler(request, LambdaContext(), runtime=self.hub)
        if request["method"] in self.lose:
            self.lose.remove(request["method"])
            lost = {"errorMessage": "Task timed out after 30.00 seconds"}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(lost).encode())}
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}


@pytest.fixture
def world(aws: None, slack: SlackStandIn, member: boto3.session.Session, now: datetime) -> dict[str, Any]:
    hub = make_runtime(slack)  # the hub's account: the Slack secret with the bot token
    create_state_table(member.client("dynamodb"), TABLE)  # the member's account: its table, no Slack secret
    machine = run_instance(member.client("ec2"), "g5.12xlarge", {"Owner": "alice@example.com"})
    moto_fixes.set_launch_time(machine, MEMBER_REGION, now - timedelta(hours=6), account=MEMBER)
    idle_for_three_hours(member.client("cloudwatch"), machine, now)
    settings = dataclasses.replace(
        hub.settings, governed_regions=(MEMBER_REGION,), home_region=MEMBER_REGION, slack_relay_arn=RELAY
    )
    runtime = Runtime(settings, ClientFactory(member, default_region=MEMBER_REGION), slack_pace=0.0)
    runtime.now = lambda: now  # type: ignore[method-assign]
    lambda_client = HubLambda(hub)
    runtime.relay_client = lambda_client
    return {"member": runtime, "lambda": lambda_client, "machine": machine, "session": member}


def idle_for_three_hours(cloudwatch: Any, machine: str, now: datetime) -> None:
    def points(name: str, value: float, dimensions: list[dict[str, str]]) -> list[dict[str, Any]]:
        return [
            {"MetricName": name, "Dimensions": dimensions, "Timestamp": now - timedelta(minutes=5 * k), "Value": value}
            for k in range(1, 37)
        ]

    by_id = [{"Name": "InstanceId", "Value": machine}]
    cloudwatch.put_metric_data(Namespace="AWS/EC2", MetricData=points("CPUUtilization", 2.0, by_id))
    cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=points("cpu_usage_active", 3.0, by_id))
    for gpu in range(4):
        dimensions = [*by_id, {"Name": "index", "Value": str(gpu)}, *A10G]
        cloudwatch.put_metric_data(
            Namespace="CWAgent", MetricData=points("nvidia_smi_utilization_gpu", 1.0, dimensions)
        )


def sweep(world: dict[str, Any]) -> dict[str, Any]:
    return idle_stopper.lambda_handler(  # type: ignore[no-any-return]
        {"costguard": "sweep"}, MemberSweepContext(), runtime=world["member"], policy=IdlePolicy()
    )


def test_a_members_warning_reaches_slack_through_the_hub_with_no_bot_token_in_the_member(
    world: dict[str, Any], slack: SlackStandIn, now: datetime
) -> None:
    result = sweep(world)

    assert result["regions"][MEMBER_REGION]["warned"] == [world["machine"]]
    [dm] = slack.messages
    assert (dm.route, dm.channel, dm.direct) == ("bot", "U0ALICE", True)
    assert world["machine"] in json.dumps(dm.blocks)
    warned = (
        world["session"]
        .client("ec2")
        .describe_tags(Filters=[{"Name": "resource-id", "Values": [world["machine"]]}])["Tags"]
    )
    assert {t["Key"]: t["Value"] for t in warned}[tags.IDLE_WARNED_AT] == formatting.format_time(now)
    assert world["session"].client("secretsmanager").list_secrets()["SecretList"] == [], "no Slack secret here"
    assert {"users.lookupByEmail", "chat.postMessage"} <= set(world["lambda"].methods)


def test_a_post_whose_answer_the_relay_lost_is_found_in_slack_not_posted_twice(
    world: dict[str, Any], slack: SlackStandIn
) -> None:
    world["lambda"].lose.append("chat.postMessage")

    result = sweep(world)

    assert result["regions"][MEMBER_REGION]["warned"] == [world["machine"]]
    assert len(slack.messages) == 1, "the member looked for its post through the relay before sending it again"
    assert world["lambda"].methods.count("chat.postMessage") == 1
    assert "conversations.history" in world["lambda"].methods


def test_the_relay_refuses_a_call_costguard_does_not_make_and_nothing_reaches_slack(
    aws: None, slack: SlackStandIn
) -> None:
    hub = make_runtime(slack)
    answer = slack_relay.lambda_handler(
        {"method": "chat.delete", "json": {"channel": "C0ALERTS", "ts": "1.2"}}, LambdaContext(), runtime=hub
    )
    assert (answer["status"], answer["body"]["ok"], answer["body"]["error"]) == (400, False, "not_relayed")
    assert slack.messages == []
