"""owner_tagger end to end: CloudTrail events in, tags on moto instances and volumes out."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.core.errors import EventValidationError
from costguard.core.settings import Mode
from costguard.runtime import Runtime
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, TABLE, ec2, gpu_group, make_runtime, tags_of

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

handler = load_handler("owner_tagger").lambda_handler


def launch(instance_type: str = "p4d.24xlarge", tags: dict[str, str] | None = None) -> str:
    params: dict[str, Any] = {"ImageId": "ami-12c6146b", "MinCount": 1, "MaxCount": 1, "InstanceType": instance_type}
    if tags:
        params["TagSpecifications"] = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
    return str(ec2().run_instances(**params)["Instances"][0]["InstanceId"])


def event_for(fixture: str, instance_id: str) -> dict[str, Any]:
    event: dict[str, Any] = load_event(f"owner_tagger/{fixture}")
    event["detail"]["responseElements"]["instancesSet"]["items"][0]["instanceId"] = instance_id
    return event


def volumes_of(instance_id: str) -> list[str]:
    reservations = ec2().describe_instances(InstanceIds=[instance_id])["Reservations"]
    return [m["Ebs"]["VolumeId"] for m in reservations[0]["Instances"][0]["BlockDeviceMappings"]]


def ledger_items() -> list[dict[str, Any]]:
    return list(boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"])


@pytest.mark.parametrize(
    ("fixture", "owner", "source", "created_by"),
    [
        ("runinstances-iam-user.json", "alice", "iam-user", "arn:aws:iam::123456789012:user/alice"),
        (
            "runinstances-assumed-role.json",
            "bob@example.com",
            "assumed-role",
            "arn:aws:sts::123456789012:assumed-role/ml-research/bob@example.com",
        ),
        (
            "runinstances-identity-center.json",
            "carol@example.com",
            "identity-center",
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_DataScientist_4f8a2b1c9d3e7a60/carol@example.com",
        ),
        ("runinstances-root.json", "root", "root", "arn:aws:iam::123456789012:root"),
    ],
)
def test_each_identity_kind_tags_the_right_owner_on_instance_and_volumes(
    runtime: Runtime, lambda_context: Any, fixture: str, owner: str, source: str, created_by: str
) -> None:
    instance_id = launch()
    result = handler(event_for(fixture, instance_id), lambda_context, runtime=runtime)

    expected = {"Owner": owner, "costguard:owner-source": source, "costguard:created-by": created_by}
    assert tags_of(instance_id) == expected
    volumes = volumes_of(instance_id)
    assert volumes, "moto gives every instance a root volume"
    for volume_id in volumes:
        assert tags_of(volume_id) == expected
    assert result["tagged"] == 1
    assert result["volumes_tagged"] == len(volumes)
    [item] = ledger_items()
    assert (item["kind"]["S"], item["instance_id"]["S"], item["owner"]["S"]) == ("owner-tagged", instance_id, owner)


def test_auto_scaling_launch_takes_the_owner_from_the_group_tags(runtime: Runtime, lambda_context: Any) -> None:
    [instance_id] = gpu_group("inference-g5", 1, {"Owner": "team-inference"})

    handler(event_for("runinstances-autoscaling.json", instance_id), lambda_context, runtime=runtime)

    tags = tags_of(instance_id)
    assert tags["Owner"] == "team-inference"
    assert tags["costguard:owner-source"] == "group-tag"
    assert tags["costguard:created-by"].endswith("assumed-role/AWSServiceRoleForAutoScaling/AutoScaling")


def test_owner_tag_set_at_launch_is_kept(runtime: Runtime, lambda_context: Any) -> None:
    instance_id = launch(tags={"Owner": "dave@example.com"})
    handler(event_for("runinstances-launch-tagged.json", instance_id), lambda_context, runtime=runtime)
    tags = tags_of(instance_id)
    assert tags["Owner"] == "dave@example.com"
    assert tags["costguard:owner-source"] == "launch-tag"
    for volume_id in volumes_of(instance_id):
        assert tags_of(volume_id)["Owner"] == "dave@example.com"


def test_dry_run_tags_nothing_but_records_what_it_would_do(aws: None, slack: SlackStandIn, lambda_context: Any) -> None:
    runtime = make_runtime(slack, mode=Mode.DRY_RUN)
    instance_id = launch()
    result = handler(event_for("runinstances-iam-user.json", instance_id), lambda_context, runtime=runtime)
    assert tags_of(instance_id) == {}
    assert result["tagged"] == 0
    [item] = ledger_items()
    assert item["applied"] == {"BOOL": False}


@pytest.mark.parametrize("fixture", ["runinstances-failed.json", "stopinstances.json"])
def test_failed_or_other_calls_tag_nothing(runtime: Runtime, lambda_context: Any, fixture: str) -> None:
    instance_id = launch()
    result = handler(load_event(f"owner_tagger/{fixture}"), lambda_context, runtime=runtime)
    assert result["status"] == "ignored"
    assert result["reason"]
    assert tags_of(instance_id) == {}
    assert ledger_items() == []


def test_malformed_event_raises_and_tags_nothing(runtime: Runtime, lambda_context: Any) -> None:
    instance_id = launch()
    with pytest.raises(EventValidationError):
        handler(load_event("owner_tagger/malformed.json"), lambda_context, runtime=runtime)
    assert tags_of(instance_id) == {}


def lookup_page(records: list[tuple[dict[str, Any], str]]) -> dict[str, Any]:
    events = []
    for original, instance_id in records:
        record = json.loads(json.dumps(original))
        record["responseElements"]["instancesSet"]["items"][0]["instanceId"] = instance_id
        events.append(
            {
                "EventId": record["eventID"],
                "EventName": "RunInstances",
                "EventTime": datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00")),
                "CloudTrailEvent": json.dumps(record),
                "Resources": [{"ResourceType": "AWS::EC2::Instance", "ResourceName": instance_id}],
            }
        )
    return {"Events": events}


def test_backfill_tags_old_instances_from_cloudtrail_and_lists_the_unknown(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = launch()
    unknown = launch("g5.xlarge")
    already = launch(tags={"Owner": "erin"})
    now = datetime.now(UTC)
    monkeypatch.setattr(runtime, "now", lambda: now)
    launch_times = [i["LaunchTime"] for r in ec2().describe_instances()["Reservations"] for i in r["Instances"]]
    record = load_event("owner_tagger/runinstances-assumed-role.json")["detail"]
    cloudtrail = runtime.client("cloudtrail", REGION)  # the container's client, which the handler will use
    with Stubber(cloudtrail) as stub:
        # The exact request: one walk over RunInstances events, 50 a page, from the oldest untagged launch.
        stub.add_response(
            "lookup_events",
            lookup_page([(record, known)]),
            {
                "LookupAttributes": [{"AttributeKey": "EventName", "AttributeValue": "RunInstances"}],
                "StartTime": min(launch_times) - timedelta(minutes=15),
                "EndTime": now,
                "MaxResults": 50,
            },
        )
        result = handler(load_event("owner_tagger/backfill.json"), lambda_context, runtime=runtime)
        stub.assert_no_pending_responses()

    assert tags_of(known)["Owner"] == "bob@example.com"
    assert tags_of(known)["costguard:owner-source"] == "assumed-role"
    assert tags_of(unknown) == {"costguard:owner-source": "unknown"}
    assert tags_of(already) == {"Owner": "erin"}, "owned instances are not touched"
    for volume_id in volumes_of(already) + volumes_of(known):
        assert "Owner" in tags_of(volume_id), "attached volumes get their instance's owner"
    summary = result["regions"][REGION]
    assert (summary["cloudtrail_pages"], summary["unattributed"]) == (1, [unknown])
    [message] = slack.messages_to("C0ALERTS")
    assert message.text == "1 instance has no owner"
    assert unknown in json.dumps(message.blocks)
    assert known not in json.dumps(message.blocks)


def test_backfill_does_not_look_up_instances_it_already_settled(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any
) -> None:
    launch(tags={"costguard:owner-source": "unknown"})
    cloudtrail = runtime.client("cloudtrail", REGION)
    with Stubber(cloudtrail) as stub:  # no response queued: any LookupEvents call would fail the test
        result = handler(load_event("owner_tagger/backfill.json"), lambda_context, runtime=runtime)
        stub.assert_no_pending_responses()
    assert result["regions"][REGION]["instances"] == 0
    assert slack.messages == []


def test_backfill_posts_before_tagging_so_a_slack_outage_loses_nothing(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    unknown = launch()
    cloudtrail = runtime.client("cloudtrail", REGION)
    slack.fail("chat.postMessage", 500, count=10)
    slack.fail("webhook", 500, count=10)
    with Stubber(cloudtrail) as stub:
        stub.add_response("lookup_events", {"Events": []})
        with pytest.raises(RuntimeError, match="SlackDeliveryError"):
            handler(load_event("owner_tagger/backfill.json"), lambda_context, runtime=runtime)
    # Untagged still, so the retried run finds it and posts again.
    assert tags_of(unknown) == {}


def test_backfill_corrects_an_owner_costguard_wrote_from_a_deployment_session(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any
) -> None:
    session = "arn:aws:sts::123456789012:assumed-role/ml-stack-deployer/AWSCloudFormation"
    wrong = launch(
        tags={"Owner": "AWSCloudFormation", "costguard:owner-source": "assumed-role", "costguard:created-by": session}
    )
    by_hand = launch(tags={"Owner": "AWSCloudFormation"})  # someone's own tag: theirs, never touched
    cloudtrail = runtime.client("cloudtrail", REGION)
    with Stubber(cloudtrail) as stub:  # no lookup needed: the launch's own ARN is on the instance
        handler(load_event("owner_tagger/backfill.json"), lambda_context, runtime=runtime)
        stub.assert_no_pending_responses()
    assert tags_of(wrong)["Owner"] == "ml-stack-deployer"
    assert tags_of(wrong)["costguard:owner-source"] == "automation-role"
    assert tags_of(by_hand)["Owner"] == "AWSCloudFormation"


def test_an_old_style_auto_scaling_launch_as_the_account_is_owned_by_the_group(
    runtime: Runtime, lambda_context: Any
) -> None:
    [instance_id] = gpu_group("legacy-g5", 1, {"Owner": "team-vision"})
    event = event_for("runinstances-autoscaling.json", instance_id)
    event["detail"]["userIdentity"] = {
        "type": "Root",
        "principalId": "123456789012",
        "arn": "arn:aws:iam::123456789012:root",
        "accountId": "123456789012",
        "invokedBy": "autoscaling.amazonaws.com",
    }
    handler(event, lambda_context, runtime=runtime)
    assert tags_of(instance_id)["Owner"] == "team-vision"
    assert tags_of(instance_id)["costguard:owner-source"] == "group-tag"
