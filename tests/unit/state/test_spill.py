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


def test_a_quarter_hour_not_seen_yet_is_the_same_time_on_the_nearest_day_seen_before_of_its_kind() -> None:
    monday, saturday = NOW - timedelta(days=1), NOW + timedelta(days=4)
    week = SpillProfile("us-east-1").learned({"sp:Compute": 40.0}, monday).learned({"sp:Compute": 5.0}, saturday)
    assert week.at("sp:Compute", NOW) == 40.0  # Tuesday 08:00 not seen: Monday's
    assert week.at("sp:Compute", NOW + timedelta(days=5)) == 5.0  # Sunday 08:00: Saturday's
    assert week.at("sp:Compute", NOW + timedelta(hours=1)) is None  # 09:00 never seen


def test_a_weekend_quarter_hour_is_never_taken_from_a_weekday_nor_a_weekday_from_a_weekend() -> None:
    """A first week's Friday-night stop must not be priced on the weekday mornings it has seen: on a weekend the
    plans may have room all day (a quarter-hour of no kind seen is priced as now)."""
    monday, saturday = NOW - timedelta(days=1), NOW + timedelta(days=4)
    weekdays = SpillProfile("us-east-1").learned({"sp:Compute": 40.0}, monday)
    assert weekdays.at("sp:Compute", saturday) is None
    weekend = SpillProfile("us-east-1").learned({"sp:Compute": 5.0}, saturday)
    assert weekend.at("sp:Compute", monday + timedelta(days=7)) is None
