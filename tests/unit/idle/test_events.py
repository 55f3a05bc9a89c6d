"""Instance ids read by AWS's format: `i-` and 8 or 17 lowercase letters and digits (the 8-character ids
of accounts from before 2016, the 17-character ones since). Every place that reads an id from outside
accepts AWS's documented samples (`i-xxxxxxxx` among them) and refuses what is malformed by name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.idle import events as idle_events
from costguard.owners.launches import parse_eventbridge_event, parse_lookup_event
from costguard.owners.rules import Identity, decide_owner
from costguard.slack.interactions import Click, parse_interaction
from testing.handlers import load_event

WELL_FORMED = ["i-xxxxxxxx", "i-1a2b3c4d", "i-abcd1111", "i-1234567890abcdef0", "i-0a1b2c3d4e5f60718", "i-zzzzzzzz"]
MALFORMED: list[Any] = [
    "i-1234567",  # 7
    "i-123456789",  # 9: between the two lengths
    "i-0123456789abcdef",  # 16
    "i-0123456789abcdef01",  # 18
    "i-XXXXXXXX",  # AWS writes ids in lowercase
    "i-1234567890ABCDEF0",
    "i-xxxx-xxx",
    "i-xxxxxxxx\n",
    "i-xxxxxxxx; rm -rf /",
    "x-12345678",
    "",
    None,
    12345678,
    ["i-xxxxxxxx"],
]


@pytest.mark.parametrize("value", WELL_FORMED)
def test_an_id_of_aws_format_is_read(value: str) -> None:
    assert shapes.instance_id(value, "detail.instance-id") == value


@pytest.mark.parametrize("value", MALFORMED)
def test_a_malformed_id_is_refused_with_the_field_named(value: Any) -> None:
    with pytest.raises(EventValidationError, match=r"detail\.instance-id is .*not an instance id"):
        shapes.instance_id(value, "detail.instance-id")


def test_the_documented_ec2_state_change_sample_is_read() -> None:
    change = idle_events.parse(load_event("idle_stopper/ec2-state-documented-sample.json"))
    assert change == idle_events.StateChanged(
        "i-xxxxxxxx", "us-east-1", "stopped", datetime(2026, 11, 21, 21, 6, 54, tzinfo=UTC)
    )


@pytest.mark.parametrize("value", ["i-123456789", "i-XXXXXXXX", ["i-xxxxxxxx"]])
def test_a_state_change_with_a_malformed_id_is_refused(value: Any) -> None:
    event = load_event("idle_stopper/ec2-state-documented-sample.json")
    event["detail"]["instance-id"] = value
    with pytest.raises(EventValidationError, match=r"detail\.instance-id is .*not an instance id"):
        idle_events.parse(event)


@pytest.mark.parametrize(("value", "read"), [("i-xxxxxxxx", True), ("i-123456789", False)])
def test_an_idle_alarm_names_its_instance_by_the_same_format(value: str, read: bool) -> None:
    event = load_event("idle_stopper/alarm-state-change.json")
    event["detail"]["alarmName"] = f"costguard-idle-{value}"
    if read:
        assert idle_events.parse(event) == idle_events.AlarmFired(value, event["region"])
    else:
        with pytest.raises(EventValidationError, match="the alarm's instance"):
            idle_events.parse(event)


@pytest.mark.parametrize(("value", "read"), [("i-xxxxxxxx", True), ("i-1a2b3c4d5", False)])
def test_a_launch_event_reads_its_instances_by_the_same_format(value: str, read: bool) -> None:
    event = load_event("owner_tagger/runinstances-iam-user.json")
    event["detail"]["responseElements"]["instancesSet"]["items"][0]["instanceId"] = value
    if read:
        launch = parse_eventbridge_event(event)
        assert value in getattr(launch, "instance_ids", ())
    else:
        with pytest.raises(EventValidationError, match="not an instance id"):
            parse_eventbridge_event(event)


def test_a_cloudtrail_record_without_its_response_names_instances_of_either_length() -> None:
    record = load_event("owner_tagger/runinstances-iam-user.json")["detail"]
    record = {**record, "responseElements": None}
    resources = [
        {"ResourceType": "AWS::EC2::Instance", "ResourceName": name}
        for name in ("i-xxxxxxxx", "i-1234567890abcdef0", "i-123456789")
    ]
    launch = parse_lookup_event({"CloudTrailEvent": json.dumps(record), "Resources": resources})
    assert getattr(launch, "instance_ids", ()) == ("i-xxxxxxxx", "i-1234567890abcdef0")


@pytest.mark.parametrize(("session", "from_instance"), [("i-xxxxxxxx", True), ("i-123456789", False)])
def test_a_role_session_named_after_an_instance_is_read_by_the_same_format(session: str, from_instance: bool) -> None:
    identity = Identity(type="AssumedRole", arn=f"arn:aws:sts::123456789012:assumed-role/trainer/{session}")
    decision = decide_owner(identity, existing_tags={}, owner_tag_key="Owner")
    assert ("launched from instance" in decision.reason) is from_instance


@pytest.mark.parametrize(("value", "read"), [("i-xxxxxxxx", True), ("i-123456789", False)])
def test_a_button_press_names_its_instance_by_the_same_format(value: str, read: bool) -> None:
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0]["value"] = json.dumps({"i": value, "r": "us-east-1"})
    body = urlencode({"payload": json.dumps(payload)})
    if read:
        click = parse_interaction(body)
        assert click is not None
        assert click.instance_id == value
        assert Click.from_json(click.to_json()).instance_id == value
    else:
        with pytest.raises(EventValidationError, match=r"action\.value\.i is .*not an instance id"):
            parse_interaction(body)
