"""Scarce capacity: which types failed to start for capacity, where, and how it reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.aws.cloudtrail import CloudTrail, capacity_failures
from costguard.core.scarcity import FailedStart, scarcities, scarcity_of

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def failed(days_ago: float, zone: str = "us-east-1a", instance_type: str = "p4d.24xlarge") -> FailedStart:
    return FailedStart(instance_type, zone, NOW - timedelta(days=days_ago), "CloudTrail")


def test_six_failed_starts_this_week_make_a_type_scarce_in_their_zone() -> None:
    table = scarcities([failed(d) for d in (0.1, 0.5, 1, 2, 3, 4)], NOW)
    found = scarcity_of("p4d.24xlarge", "us-east-1a", table)
    assert found is not None
    assert found.evidence(NOW) == "6 p4d.24xlarge starts failed for capacity in us-east-1a this week"
    assert scarcity_of("p4d.24xlarge", "us-east-1b", table) is None
    assert scarcity_of("p5.48xlarge", "us-east-1a", table) is None


def test_failures_older_than_two_weeks_are_forgotten() -> None:
    table = scarcities([failed(15), failed(20)], NOW)
    assert scarcity_of("p4d.24xlarge", "us-east-1a", table) is None


def test_a_failure_that_named_no_zone_counts_for_every_zone_of_the_region() -> None:
    table = scarcities([failed(9, zone=""), failed(1)], NOW)
    here = scarcity_of("p4d.24xlarge", "us-east-1a", table)
    other = scarcity_of("p4d.24xlarge", "us-east-1c", table)
    assert here is not None
    assert other is not None
    assert here.failures == 2
    assert here.evidence(NOW) == "2 p4d.24xlarge starts failed for capacity in us-east-1a in the last two weeks"
    assert other.evidence(NOW) == "1 p4d.24xlarge start failed for capacity in the last two weeks"


def trail(name: str, error: str, params: dict[str, object], when: str = "2026-11-25T08:12:00Z") -> dict[str, object]:
    record = {"eventName": name, "errorCode": error, "eventTime": when, "requestParameters": params}
    return {"EventName": name, "CloudTrailEvent": json.dumps(record)}


def test_cloudtrail_launches_and_starts_refused_for_capacity_are_read_and_nothing_else() -> None:
    events: list[dict[str, object]] = [
        trail(
            "RunInstances",
            "Server.InsufficientInstanceCapacity",
            {"instanceType": "p5.48xlarge", "placement": {"availabilityZone": "us-east-1b"}},
        ),
        trail("RunInstances", "Server.InsufficientInstanceCapacity", {"instanceType": "p4d.24xlarge"}),
        trail(
            "StartInstances",
            "Server.InsufficientInstanceCapacity",
            {"instancesSet": {"items": [{"instanceId": "i-0abc"}, {"instanceId": "i-0def"}]}},
        ),
        trail("RunInstances", "Client.UnauthorizedOperation", {"instanceType": "p5.48xlarge"}),
        {"EventName": "StartInstances", "CloudTrailEvent": "not json"},
        trail("StartInstances", "Server.InsufficientInstanceCapacity", {"instancesSet": "hostile"}),
    ]
    found = capacity_failures(events, "us-east-1")
    assert [(f.instance_type, f.zone, f.instance_id) for f in found] == [
        ("p5.48xlarge", "us-east-1b", ""),
        ("p4d.24xlarge", "", ""),
        ("", "", "i-0abc"),
        ("", "", "i-0def"),
    ]
    assert found[0].at == datetime(2026, 11, 25, 8, 12, tzinfo=UTC)


class Pages:
    """LookupEvents' paginator: `pages` pages of one refused launch each, per event name."""

    def __init__(self, pages: int) -> None:
        self.pages, self.asked = pages, []  # type: ignore[var-annotated]

    def get_paginator(self, _name: str) -> Pages:
        return self

    def paginate(self, LookupAttributes: list[dict[str, str]], **_: object) -> list[Any]:
        name = LookupAttributes[0]["AttributeValue"]
        self.asked.append(name)
        record = {
            "eventName": name,
            "eventTime": "2026-11-24T09:00:00Z",
            "errorCode": "Server.InsufficientInstanceCapacity",
            "requestParameters": {"instanceType": "p5.48xlarge", "instancesSet": {"items": [{"instanceId": "i-1"}]}},
        }
        page = {"Events": [{"CloudTrailEvent": json.dumps(record)}], "NextToken": "more"}
        return [page] * (self.pages - 1) + [{"Events": page["Events"]}]


def test_both_kinds_of_start_are_read_and_a_walk_cut_short_says_so() -> None:
    start, end = datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 24, tzinfo=UTC)
    whole = Pages(3)
    found, complete = CloudTrail(whole).refused_for_capacity("us-east-1", start, end)  # type: ignore[arg-type]
    assert whole.asked == ["StartInstances", "RunInstances"]
    assert complete
    assert len(found) == 6
    found, complete = CloudTrail(Pages(30)).refused_for_capacity("us-east-1", start, end, most_pages=5)  # type: ignore[arg-type]
    assert not complete
    assert len(found) == 10
