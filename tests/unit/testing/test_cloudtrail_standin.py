"""testing/aws/cloudtrail.py refuses what CloudTrail's LookupEvents refuses, and answers as it answers: one
attribute a call, 50 events a page at most, newest first, the record's JSON beside its lifted fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from testing.aws.cloudtrail import CloudTrail
from testing.aws.errors import ApiError

T0 = datetime(2026, 11, 9, 8, tzinfo=UTC)


def failed_start(n: int, instance_id: str) -> dict[str, Any]:
    return {
        "eventID": f"e-{n}",
        "eventName": "StartInstances",
        "eventSource": "ec2.amazonaws.com",
        "eventTime": f"{T0 + timedelta(minutes=n):%Y-%m-%dT%H:%M:%SZ}",
        "errorCode": "Server.InsufficientInstanceCapacity",
        "userIdentity": {"type": "IAMUser", "userName": f"user{n}"},
        "requestParameters": {"instancesSet": {"items": [{"instanceId": instance_id}]}},
    }


def launch(n: int) -> dict[str, Any]:
    return {
        "eventID": f"r-{n}",
        "eventName": "RunInstances",
        "eventSource": "ec2.amazonaws.com",
        "eventTime": f"{T0 + timedelta(minutes=n):%Y-%m-%dT%H:%M:%SZ}",
        "userIdentity": {"type": "IAMUser", "userName": "someone"},
        "requestParameters": {"instanceType": "p4d.24xlarge", "placement": {"availabilityZone": "us-east-1a"}},
    }


TRAIL = CloudTrail(lambda region: [failed_start(n, f"i-{n:017x}") for n in range(120)] + [launch(7)])


def lookup(**params: Any) -> dict[str, Any]:
    return TRAIL.lookup_events(params)


def test_events_come_newest_first_fifty_a_page_behind_a_token() -> None:
    first = lookup(LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "StartInstances"}])
    assert len(first["Events"]) == 50
    assert first["Events"][0]["EventId"] == "e-119"
    assert first["NextToken"]
    pages = [first]
    while "NextToken" in pages[-1]:
        pages.append(
            lookup(
                LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "StartInstances"}],
                NextToken=pages[-1]["NextToken"],
            )
        )
    assert sum(len(p["Events"]) for p in pages) == 120


def test_an_event_carries_its_record_and_the_instances_it_names() -> None:
    answer = lookup(
        LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": f"i-{3:017x}"}],
        StartTime=T0,
        EndTime=T0 + timedelta(hours=1),
    )
    (event,) = answer["Events"]
    assert event["EventTime"] == T0 + timedelta(minutes=3)
    assert event["Resources"] == [{"ResourceType": "AWS::EC2::Instance", "ResourceName": f"i-{3:017x}"}]
    assert json.loads(event["CloudTrailEvent"])["errorCode"] == "Server.InsufficientInstanceCapacity"


def test_the_time_range_narrows_the_events() -> None:
    answer = lookup(
        LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "RunInstances"}],
        StartTime=T0 + timedelta(minutes=8),
    )
    assert answer["Events"] == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        (
            {
                "LookupAttributes": [
                    {"AttributeKey": "EventName", "AttributeValue": "StartInstances"},
                    {"AttributeKey": "EventName", "AttributeValue": "RunInstances"},
                ]
            },
            "InvalidLookupAttributesException",
        ),
        (
            {"LookupAttributes": [{"AttributeKey": "eventName", "AttributeValue": "x"}]},
            "InvalidLookupAttributesException",
        ),
        ({"MaxResults": 51}, "InvalidMaxResultsException"),
        ({"StartTime": T0, "EndTime": T0 - timedelta(minutes=1)}, "InvalidTimeRangeException"),
        ({"NextToken": "abc"}, "InvalidNextTokenException"),
        ({"Filter": "x"}, "ValidationException"),
    ],
)
def test_what_cloudtrail_refuses_is_refused(params: dict[str, Any], code: str) -> None:
    with pytest.raises(ApiError) as caught:
        TRAIL.lookup_events(params)
    assert caught.value.code == code
