"""The organization's weekly digest across two moto accounts: the member's weekly digest hands its week
to the hub's figures queue; the hub's digest shows both accounts and the totals, names the account
that did not report, and refuses a hand-off from an account it does not expect; and a person with
machines in both accounts gets one message about their week, from the hub.

moto keeps each account's queues apart and evaluates no queue policy across accounts, so the member's
hand-off is sent with the hub's credentials here (as the click test does the other way);
`tests/template` asserts the policy that lets exactly the member digest roles send in AWS.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.aws.clients import ClientFactory
from costguard.digest.posting import DigestIncomplete
from costguard.runtime import Runtime
from costguard.state.handoffs import HandedWeeks
from testing.fuzz import mutants
from testing.handlers import LambdaContext, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import (
    MEMBER,
    MEMBER_REGION,
    REGION,
    TABLE,
    MemberContext,
    make_runtime,
    member_with_machine,
)

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

HUB, SILENT = "123456789012", "444455556666"
digest = load_handler("weekly_digest")
organization = load_handler("organization_digest")
ORGANIZATION_EVENT = {"costguard": "organization-digest"}


def publish_idle_hours(session: Any, iid: str, end: datetime, hours: int) -> None:
    """`hours` hourly points up to `end`: CPU at 1 %, one A10G at 0 %: idle all along."""
    cloudwatch = session.client("cloudwatch")
    moments = [end - timedelta(hours=k, minutes=30) for k in range(1, hours + 1)]
    ec2 = [{"MetricName": "CPUUtilization", "Dimensions": [{"Name": "InstanceId", "Value": iid}], "Timestamp": t,
            "Value": 1.0} for t in moments]  # fmt: skip
    dims = [{"Name": "InstanceId", "Value": iid}, {"Name": "index", "Value": "0"},
            {"Name": "name", "Value": "NVIDIA A10G"}, {"Name": "arch", "Value": "Ampere"}]  # fmt: skip
    gpu = [{"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": dims, "Timestamp": t, "Value": 0.0}
           for t in moments]  # fmt: skip
    cloudwatch.put_metric_data(Namespace="AWS/EC2", MetricData=ec2)
    cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=gpu)


@pytest.fixture
def org(
    aws: None, slack: SlackStandIn, member: boto3.session.Session, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    hub = make_runtime(slack)
    monkeypatch.setattr(hub, "now", lambda: now)
    hub_sqs = boto3.client("sqs", region_name=REGION)
    queue = hub_sqs.create_queue(QueueName="costguard-figures")["QueueUrl"]
    queue_arn = f"arn:aws:sqs:{REGION}:{HUB}:costguard-figures"
    machine = member_with_machine(member, slack, "g5.xlarge")
    publish_idle_hours(member, machine, now, 10)
    settings = dataclasses.replace(hub.settings, governed_regions=(MEMBER_REGION,), home_region=MEMBER_REGION)
    member_runtime = Runtime(settings, ClientFactory(member, default_region=MEMBER_REGION), slack_pace=0.0)
    member_runtime.clients._clients[("sqs", REGION)] = hub_sqs  # what the hub's queue policy allows the member
    monkeypatch.setattr(member_runtime, "now", lambda: now)
    monkeypatch.setenv("HANDOFF_QUEUE_ARN", queue_arn)
    monkeypatch.setenv("ACCOUNT_LABEL", "training")
    monkeypatch.setenv("OWNER_DIGESTS", "false")
    monkeypatch.setenv("FIGURES_QUEUE_URL", queue)
    monkeypatch.setenv(
        "MEMBER_DIGEST_ROLES",
        f"arn:aws:iam::{MEMBER}:role/costguard-WeeklyDigestFunctionRole-1,"
        f"arn:aws:iam::{SILENT}:role/costguard-WeeklyDigestFunctionRole-2",
    )
    digest._settings.cache_clear()
    organization._settings.cache_clear()
    yield {"hub": hub, "member": member_runtime, "queue": queue, "sqs": hub_sqs, "machine": machine}
    digest._settings.cache_clear()
    organization._settings.cache_clear()


def weekly(runtime: Runtime, context: Any, monkeypatch: pytest.MonkeyPatch, label: str) -> dict[str, Any]:
    monkeypatch.setenv("ACCOUNT_LABEL", label)
    digest._settings.cache_clear()
    return digest.lambda_handler({"costguard": "digest"}, context, runtime=runtime)  # type: ignore[no-any-return]


def handed_week(world: dict[str, Any]) -> dict[str, Any]:
    """The first hand-off on the hub's queue, read and left there (visible again at once)."""
    peek = world["sqs"].receive_message(QueueUrl=world["queue"], MaxNumberOfMessages=1, VisibilityTimeout=0)
    week: dict[str, Any] = json.loads(peek["Messages"][0]["Body"])
    return week


def organization_digest(world: dict[str, Any]) -> dict[str, Any]:
    return organization.lambda_handler(ORGANIZATION_EVENT, LambdaContext(), runtime=world["hub"])  # type: ignore[no-any-return]


def test_the_hub_posts_one_digest_with_both_accounts_and_names_the_one_that_did_not_report(
    org: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    member_week = weekly(org["member"], MemberContext(), monkeypatch, "training")
    assert member_week["handed_over"]
    assert member_week["idle_gpu_hours"] == 10
    weekly(org["hub"], LambdaContext(), monkeypatch, "research")
    # someone else's hand-off, from an account the hub does not expect, and one that is not a week at all:
    # refused, and left on the queue for the dead-letter queue
    forged = {**handed_week(org), "account": "999999999999"}
    org["sqs"].send_message(QueueUrl=org["queue"], MessageBody=json.dumps(forged))
    org["sqs"].send_message(QueueUrl=org["queue"], MessageBody="{not a week")

    posts_before = len(slack.messages)
    result = organization_digest(org)

    assert result["status"] == "posted"
    assert sorted(result["accounts"]) == sorted([MEMBER, HUB])
    assert result["missing"] == [SILENT]
    assert result["refused"] == 2
    assert result["idle_gpu_hours"] == 10
    assert result["chart_file"]
    [post] = slack.messages[posts_before:]
    text = json.dumps(post.blocks)
    assert "*2 of 3 accounts* reported" in text
    assert "*training (111122223333)*: 1 machine, 10 GPU-h" in text
    assert "*research (123456789012)*" not in text, "an account with no GPU machines has no row of zeros"
    assert "Reporting, no GPU machines this week: research (123456789012)." in text
    assert "`444455556666`: never reported" in text
    assert "999999999999" not in text
    assert "2 hand-offs could not be read" in text
    # the two it could read are gone from the queue; the two it could not stay there for the DLQ
    left = org["sqs"].get_queue_attributes(QueueUrl=org["queue"], AttributeNames=["All"])["Attributes"]
    assert int(left["ApproximateNumberOfMessages"]) + int(left["ApproximateNumberOfMessagesNotVisible"]) == 2

    # The scheduler's retry of a run that did post: nothing twice.
    again = organization_digest(org)
    assert again["status"] == "already-posted"
    assert len(slack.messages) == posts_before + 1


def test_a_member_whose_hand_off_fails_posts_its_own_digest_and_fails_so_the_retry_hands_it_over(
    org: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDOFF_QUEUE_ARN", f"arn:aws:sqs:{REGION}:{HUB}:deleted-queue")
    with pytest.raises(DigestIncomplete, match="hand-off to the hub"):
        weekly(org["member"], MemberContext(), monkeypatch, "training")
    posted = len(slack.messages)
    assert posted == 3  # the member's own digest went out: its post and the two replies in its thread
    monkeypatch.setenv("HANDOFF_QUEUE_ARN", f"arn:aws:sqs:{REGION}:{HUB}:costguard-figures")
    retry = weekly(org["member"], MemberContext(), monkeypatch, "training")
    assert retry["status"] == "already-posted"
    assert retry["handed_over"]
    assert len(slack.messages) == posted
    result = organization_digest(org)
    assert MEMBER in result["accounts"]
    assert result["missing"] == [HUB, SILENT]


def test_a_late_retry_of_last_weeks_hand_off_never_replaces_this_weeks(
    org: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    weekly(org["member"], MemberContext(), monkeypatch, "training")
    body = handed_week(org)
    organization_digest(org)
    older = {**body, "end": (datetime.fromisoformat(body["end"]) - timedelta(days=7)).isoformat(), "machines": 99}
    org["sqs"].send_message(QueueUrl=org["queue"], MessageBody=json.dumps(older))
    organization_digest(org)  # posted already; it still reads the queue
    kept = HandedWeeks(boto3.client("dynamodb", region_name=REGION), TABLE).latest([MEMBER])
    assert json.loads(kept[MEMBER])["machines"] == 1
    left = org["sqs"].get_queue_attributes(QueueUrl=org["queue"], AttributeNames=["All"])["Attributes"]
    assert left["ApproximateNumberOfMessages"] == "0"  # read, found older, dropped


def test_the_hub_reads_hundreds_of_mutated_hand_offs_without_an_unhandled_error_or_a_forged_account(
    org: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    weekly(org["member"], MemberContext(), monkeypatch, "training")
    real = handed_week(org)
    sent = 0
    for mutant in mutants([real], 300, seed=15):
        try:
            body = mutant.event if isinstance(mutant.event, str) else json.dumps(mutant.event)
        except (TypeError, ValueError):
            continue
        org["sqs"].send_message(QueueUrl=org["queue"], MessageBody=body.encode("utf-8", "replace").decode()[:200_000])
        sent += 1
    result = organization_digest(org)  # raises nothing but what a run may raise
    assert result["status"] == "posted"
    assert set(result["accounts"]) <= {MEMBER, HUB}
    text = json.dumps(slack.messages[-1].blocks)
    assert "<!channel>" not in text
    left = org["sqs"].get_queue_attributes(QueueUrl=org["queue"], AttributeNames=["All"])["Attributes"]
    refused = int(left["ApproximateNumberOfMessagesNotVisible"])
    assert refused == result["refused"] > 0  # each unreadable one stays, for the dead-letter queue
    assert int(left["ApproximateNumberOfMessages"]) == 0  # the others were read, kept and deleted
    # nothing but the expected accounts' weeks was kept
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    kept = {i["pk"]["S"] for i in items if i["pk"]["S"].startswith("handoff#")}
    assert kept == {f"handoff#{MEMBER}"}
    assert sent > 250


def test_a_person_with_machines_in_two_accounts_gets_one_message_from_the_hub_with_both(
    org: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.conftest import ec2, run_instance  # noqa: PLC0415

    monkeypatch.setenv("OWNER_DIGESTS", "true")
    now = org["hub"].now()
    # alice's idle g5.xlarge in the member account (10 h, $10.06), and one in the hub's (12 h, $12.07)
    hubs = run_instance(ec2(), "g5.xlarge", {"Owner": "alice@example.com"})
    publish_idle_hours(boto3.Session(region_name=REGION), hubs, now, 12)
    member_week = weekly(org["member"], MemberContext(), monkeypatch, "training")
    hub_week = weekly(org["hub"], LambdaContext(), monkeypatch, "research")
    # neither account messages her itself: the hub does, once
    assert [m for m in slack.messages if m.direct] == []
    assert member_week["owners_told"] == hub_week["owners_told"] == []

    result = organization_digest(org)

    [dm] = [m for m in slack.messages if m.direct]
    assert dm.channel == "U0ALICE"
    text = json.dumps(dm.blocks)
    assert "idle machines cost you *$22.13* across 2 accounts" in text
    # moto has no bill: each account's dollars are the on-demand list's, and each part says so
    assert "*training (111122223333)*: idle machines cost *$10.06* at on-demand list prices" in text
    assert "*research (123456789012)*: idle machines cost *$12.07* at on-demand list prices" in text
    assert dm.text == "Your GPU week: $22.13 idle at on-demand list prices"
    assert result["owners_told"] == ["alice@example.com", "alice@example.com"]
    assert result["owners_incomplete"] == []
    # the hub's retry: nothing twice
    organization_digest(org)
    assert len([m for m in slack.messages if m.direct]) == 1
