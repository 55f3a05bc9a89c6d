"""Integration tests: handlers run in-process against moto's emulated AWS."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costguard.aws.clients import ClientFactory
from costguard.core.settings import Mode, Settings
from costguard.runtime import Runtime
from testing import message_buttons
from testing.handlers import LambdaContext
from testing.slack_standin import SlackStandIn
from testing.slack_text import plain_times_in
from testing.template import install_costguard

REGION = "us-east-1"
TABLE = "costguard-state"
SECRET = "costguard/slack"
SIGNING_SECRET = "test-signing-secret"  # the Slack app's: what the receiver verifies a click with
# A second account of the organization, served by moto through STS AssumeRole credentials.
MEMBER, MEMBER_REGION = "111122223333", "eu-west-1"


def ec2() -> Any:
    return boto3.client("ec2", region_name=REGION)


def tags_of(resource_id: str) -> dict[str, str]:
    """The tags of an instance or volume, read back from (emulated) EC2."""
    found = ec2().describe_tags(Filters=[{"Name": "resource-id", "Values": [resource_id]}])["Tags"]
    return {t["Key"]: t["Value"] for t in found}


def gpu_group(name: str, size: int, tags: dict[str, str] | None = None) -> list[str]:
    """An Auto Scaling group of g5.2xlarge instances; returns its members' instance ids."""
    ec2().create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g5.2xlarge"}
    )
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": name},
        MinSize=size,
        MaxSize=size,
        AvailabilityZones=[f"{REGION}a"],
        Tags=[
            {"Key": k, "Value": v, "PropagateAtLaunch": False, "ResourceId": name, "ResourceType": "auto-scaling-group"}
            for k, v in (tags or {}).items()
        ],
    )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    return [m["InstanceId"] for m in group["Instances"]]


@pytest.fixture
def now() -> datetime:
    # Aligned to a 5-minute boundary, as CloudWatch periods are, and recent enough for CloudWatch.
    t = datetime.now(UTC).replace(second=0, microsecond=0)
    return t - timedelta(minutes=t.minute % 5)


def midday(now: datetime) -> datetime:
    """The last 14:00 UTC at or before `now`: the team's afternoon (UTC in these tests) whatever hour a test runs. A
    machine that cannot answer its check, whose nights costguard has not watched, is held through its evenings and
    nights, and not stopped in its owner's weekday morning (rules/automation.py): a test of what is done to it in
    the day runs in the early afternoon."""
    noon = now.replace(hour=14, minute=0)
    return noon if noon <= now else noon - timedelta(days=1)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    """The Slack stand-in. A test fails if Slack would have refused any message costguard sent it, even where
    costguard carried on after the refusal (a test that means to be refused empties `refused`), or if a message
    offers a button that does not act, or too many (testing/message_buttons.py)."""
    standin = SlackStandIn(users={"alice@example.com": "U0ALICE", "carol@example.com": "U0CAROL"}).start()
    try:
        yield standin
        standin.assert_all_accepted()
        unserving = message_buttons.problems(standin.said)
        assert not unserving, "buttons that do not serve:\n" + "\n".join(unserving)
    finally:
        standin.stop()


@pytest.fixture
def times_in_readers_zones(slack: SlackStandIn) -> Iterator[None]:
    """A test fails if a message costguard sent (a post, an edit, a reply) shows a time or a day as plain text
    rather than as a Slack date each reader sees in their own zone (testing/slack_text.py)."""
    yield
    plain = plain_times_in(slack.said)
    assert not plain, f"{len(plain)} time(s) as plain text:\n" + "\n".join(plain)


def make_runtime(slack: SlackStandIn | None, mode: Mode = Mode.ENFORCE, **overrides: Any) -> Runtime:
    """A Runtime over moto with the state table and Slack secret in place."""
    secret = {"bot_token": slack.token, "webhook_url": slack.webhook_url} if slack else {"bot_token": "xoxb-x"}
    install_costguard(
        boto3.client("dynamodb", region_name=REGION),
        boto3.client("secretsmanager", region_name=REGION),
        {"STATE_TABLE": TABLE, "SLACK_SECRET_NAME": SECRET},
        json.dumps(secret),
    )
    settings = Settings(
        mode=mode,
        slack_secret_name=SECRET,
        alerts_channel="C0ALERTS",
        digest_channel="C0DIGEST",
        owner_tag_key="Owner",
        email_domain="example.com",
        governed_regions=(REGION,),
        state_table=TABLE,
        state_ttl_days=400,
        slack_api_url=slack.api_url if slack else "",
        home_region=REGION,
    )
    for key, value in overrides.items():
        object.__setattr__(settings, key, value)
    return Runtime(settings, ClientFactory(default_region=REGION))


@pytest.fixture
def runtime(aws: None, slack: SlackStandIn) -> Runtime:
    return make_runtime(slack)


@pytest.fixture
def clicks_verified(runtime: Runtime, slack: SlackStandIn) -> None:
    """The Slack secret with the app's signing secret, so that the receiver verifies the clicks a test presses
    (signed with it: tests/integration/test_buttons.py)."""
    secret = {"bot_token": slack.token, "webhook_url": slack.webhook_url, "signing_secret": SIGNING_SECRET}
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.put_secret_value(SecretId=SECRET, SecretString=json.dumps(secret))


class MemberContext(LambdaContext):
    """The context of a function deployed in the member account."""

    invoked_function_arn = f"arn:aws:lambda:{MEMBER_REGION}:{MEMBER}:function:costguard-buttons"


@pytest.fixture
def member(aws: None) -> boto3.session.Session:
    creds = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=f"arn:aws:iam::{MEMBER}:role/costguard-deploy", RoleSessionName="tests"
    )["Credentials"]
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=MEMBER_REGION,
    )


def member_with_machine(member: boto3.session.Session, slack: SlackStandIn, instance_type: str) -> str:
    """costguard's table and secret in the member account, and one machine of alice's there; its id."""
    install_costguard(
        member.client("dynamodb"),
        member.client("secretsmanager"),
        {"STATE_TABLE": TABLE, "SLACK_SECRET_NAME": SECRET},
        json.dumps({"bot_token": slack.token}),
    )
    return run_instance(member.client("ec2"), instance_type, {"Owner": "alice@example.com"})


def run_instance(client: Any, instance_type: str, tags: dict[str, str]) -> str:
    """One instance of `instance_type` with `tags`, launched through `client`; its id."""
    specs = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    launched = client.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType=instance_type, TagSpecifications=specs
    )
    return str(launched["Instances"][0]["InstanceId"])


# The activity check's answers, as a sweep's SSM client hears them (test_activity_check.py and the tests of what
# a machine's own schedule leads to: keep it for its runs, Stop now's promise, the messages that change in place).
DOCUMENT = "costguard-ActivityCheckDocument-ABC123"
CMD_C1 = "00000000-0000-4000-8000-000000000001"


def report(**fields: Any) -> str:
    """A machine's activity check output (its fields over an answer that saw nothing alive)."""
    return json.dumps({"v": 1, "at": 0, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None, **fields})


def ssm_client() -> Any:
    return boto3.client("ssm", region_name=REGION)


def invocation(instance_id: str, status: str = "Success", output: str = "") -> dict[str, Any]:
    return {
        "CommandId": CMD_C1,
        "InstanceId": instance_id,
        "Status": status,
        "CommandPlugins": [{"Name": "activityCheck", "Status": status, "Output": output}],
    }


@pytest.fixture
def answers(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Each machine's activity check output (None: managed by SSM but no answer); machines not named
    have no SSM agent. The sweep's SSM client answers from it."""
    given: dict[str, str | None] = {}
    client = ssm_client()
    monkeypatch.setattr("costguard.idle.reads.checks.POLL_SECONDS", 0.01)

    def describe(params: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        wanted = params["Filters"][0]["Values"]
        return {"InstanceInformationList": [{"InstanceId": i, "PingStatus": "Online"} for i in wanted if i in given]}

    def invocations(**_: Any) -> dict[str, Any]:
        return {
            "CommandInvocations": [
                invocation(i, output=out) if out is not None else invocation(i, "InProgress")
                for i, out in given.items()
            ]
        }

    class Fake:
        meta = client.meta
        exceptions = client.exceptions

        def get_paginator(self, name: str) -> Any:
            return {"describe_instance_information": _Pages(describe), "list_command_invocations": _Pages(invocations)}[
                name
            ]

        def send_command(self, **params: Any) -> dict[str, Any]:
            assert params["DocumentName"] == DOCUMENT
            assert all(i in given for i in params["InstanceIds"])  # only managed machines are asked
            return {"Command": {"CommandId": CMD_C1}}

    runtime.clients._clients[("ssm", REGION)] = Fake()
    return given


class _Pages:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def paginate(self, **params: Any) -> list[dict[str, Any]]:
        return [self.answer(params=params) if "Filters" in params else self.answer()]
