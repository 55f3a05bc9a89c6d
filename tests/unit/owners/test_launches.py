from __future__ import annotations

import json

import pytest

from costguard.core.errors import EventValidationError
from costguard.core.records import Skipped
from costguard.owners.launches import LaunchEvent, parse_eventbridge_event, parse_lookup_event
from testing.handlers import load_event


def test_runinstances_event_gives_instances_region_and_time() -> None:
    launch = parse_eventbridge_event(load_event("owner_tagger/runinstances-iam-user.json"))
    assert isinstance(launch, LaunchEvent)
    assert launch.instance_ids == ("i-0a1b2c3d4e5f60718",)
    assert launch.region == "us-east-1"
    assert launch.event_time.isoformat() == "2026-11-20T09:14:03+00:00"


def test_failed_runinstances_is_skipped_with_its_error_code() -> None:
    result = parse_eventbridge_event(load_event("owner_tagger/runinstances-failed.json"))
    assert isinstance(result, Skipped)
    assert "InsufficientInstanceCapacity" in result.reason


def test_other_ec2_calls_are_skipped() -> None:
    result = parse_eventbridge_event(load_event("owner_tagger/stopinstances.json"))
    assert result == Skipped("ec2.amazonaws.com StopInstances is not an EC2 RunInstances call")


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ([], "event is a list, not an object"),
        ({"detail-type": "EC2 Instance State-change Notification", "detail": {}}, "detail-type"),
        ({"detail-type": "AWS API Call via CloudTrail"}, "detail is missing, not an object"),
        ({"detail-type": "AWS API Call via CloudTrail", "detail": {"eventName": "RunInstances"}}, "eventSource"),
    ],
)
def test_malformed_events_raise_validation_errors(event: object, message: str) -> None:
    with pytest.raises(EventValidationError, match=message):
        parse_eventbridge_event(event)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("userIdentity", "userName"), ["alice"], r"userIdentity.userName is a list, not a string"),
        (("userIdentity", "sessionContext"), "x", r"sessionContext is a string of 1 characters, not an object"),
        (("responseElements", "instancesSet", "items"), True, r"items is a bool, not a list"),
        (("responseElements", "instancesSet", "items", 0, "instanceId"), ["i-0abc12345"], "not an instance id"),
        (("awsRegion",), ["us-east-1"], "not an AWS region"),
    ],
)
def test_a_wrong_typed_field_is_refused_by_name_never_turned_into_a_tag(
    path: tuple[str | int, ...], value: object, message: str
) -> None:
    event = load_event("owner_tagger/runinstances-iam-user.json")
    parent = event["detail"]
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    with pytest.raises(EventValidationError, match=message):
        parse_eventbridge_event(event)


def test_successful_runinstances_without_instances_is_malformed() -> None:
    with pytest.raises(EventValidationError, match="names no instance"):
        parse_eventbridge_event(load_event("owner_tagger/malformed.json"))


def test_bad_event_time_is_malformed() -> None:
    event = load_event("owner_tagger/runinstances-iam-user.json")
    event["detail"]["eventTime"] = "yesterday"
    with pytest.raises(EventValidationError, match="eventTime"):
        parse_eventbridge_event(event)


def test_lookup_result_with_truncated_record_uses_resources_list() -> None:
    record = load_event("owner_tagger/runinstances-root.json")["detail"]
    record["responseElements"] = None  # CloudTrail drops oversized responseElements
    result = {
        "EventId": record["eventID"],
        "CloudTrailEvent": json.dumps(record),
        "Resources": [
            {"ResourceType": "AWS::EC2::Instance", "ResourceName": "i-0aaaaaaaaaaaaaaa1"},
            {"ResourceType": "AWS::EC2::Ami", "ResourceName": "ami-0f3c9c4d6a1b2e8f7"},
        ],
    }
    launch = parse_lookup_event(result)
    assert isinstance(launch, LaunchEvent)
    assert launch.instance_ids == ("i-0aaaaaaaaaaaaaaa1",)


def test_lookup_result_that_is_not_json_raises() -> None:
    with pytest.raises(EventValidationError, match="not JSON"):
        parse_lookup_event({"CloudTrailEvent": "{truncated"})
