"""A region's spill profile: one bounded item a region, read back as written; an item that does not read is ignored."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from costguard.core.bill import MAX_LAYERS, WEEK_SLOTS, SpillProfile
from costguard.state.spill import SpillLog
from testing.aws.dynamodb import DynamoDBClient

NOW = datetime(2026, 11, 24, 8, 5, tzinfo=UTC)  # a Tuesday, 08:00's quarter-hour


def test_a_profile_is_read_back_as_written_and_a_quarter_hour_seen_again_is_averaged() -> None:
    client = DynamoDBClient()
    log = SpillLog(client, "costguard-state")  # type: ignore[arg-type]
    assert log.read("us-east-1") is None
    week = SpillProfile("us-east-1").learned({"sp:Compute": 40.0, "ri:p4d/default": 192.0}, NOW)
    week = week.learned({"sp:Compute": 20.0}, NOW + timedelta(days=7))
    log.write(week, NOW)
    found = log.read("us-east-1")
    assert found == week
    assert found.at("sp:Compute", NOW) == 30.0
    assert found.at("ri:p4d/default", NOW) == 192.0
    assert found.at("sp:Compute", NOW + timedelta(minutes=15)) is None  # a quarter-hour not seen yet
    assert log.read("eu-west-1") is None


def test_a_profile_holds_a_week_of_quarter_hours_for_a_bounded_number_of_layers() -> None:
    week = SpillProfile("us-east-1").learned({f"sp:g{n}@us-east-1": 1.0 for n in range(MAX_LAYERS + 4)}, NOW)
    assert len(week.layers) == MAX_LAYERS
    assert all(len(slots) == WEEK_SLOTS for slots in week.layers.values())


def test_an_item_that_does_not_read_as_a_profile_is_ignored_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    client = DynamoDBClient()
    log = SpillLog(client, "costguard-state")  # type: ignore[arg-type]
    client.put_item(
        TableName="costguard-state",
        Item={"pk": {"S": "spill#us-east-1"}, "sk": {"S": "profile"}, "l": {"M": {"sp:Compute": {"S": "1,2,x"}}}},
    )
    with caplog.at_level(logging.WARNING):
        assert log.read("us-east-1") is None
    assert "spill profile unreadable: ignored" in caplog.text


def test_a_quarter_hour_not_seen_yet_is_unknown_whatever_the_days_around_it() -> None:
    """A first week's Friday-night stop must not be priced on the days it has seen: a Sunday is not the Saturday
    some worked, nor a weekend the weekday mornings (a quarter-hour of no day seen: the stop is priced on this hour
    alone)."""
    monday, saturday = NOW - timedelta(days=1), NOW + timedelta(days=4)
    week = SpillProfile("us-east-1").learned({"sp:Compute": 40.0}, monday).learned({"sp:Compute": 5.0}, saturday)
    assert week.at("sp:Compute", monday) == 40.0
    assert week.at("sp:Compute", saturday + timedelta(days=7)) == 5.0  # the same quarter-hour a week on
    assert week.at("sp:Compute", NOW) is None  # Tuesday 08:00: not Monday's
    assert week.at("sp:Compute", NOW + timedelta(days=5)) is None  # Sunday 08:00: not Saturday's
