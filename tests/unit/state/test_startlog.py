"""The learned starts kept for each machine: a record that could not be read is never written over."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from costguard.idle.rules.recurring import LearnedStart, learn
from costguard.state.startlog import StartLog, StartRecord

NOW = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
KEPT = {"starts": [{"e": "2026-11-20T02:00:00Z", "s": "2026-11-20T01:45:00Z", "o": "wasted"}], "broken": ["UTC 02:00"]}


class Table:
    """A state table whose GetItem fails `failures` times (throttled), recording what is written."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.item = {"record": {"S": json.dumps(KEPT)}}
        self.puts: list[dict[str, Any]] = []

    def get_item(self, **_: Any) -> dict[str, Any]:
        if self.failures:
            self.failures -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "GetItem")
        return {"Item": self.item}

    def put_item(self, Item: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.puts.append(Item)
        self.item = Item
        return {}


def test_a_record_that_could_not_be_read_is_not_written_over_with_an_empty_one() -> None:
    table = Table(failures=1)
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    log.update("i-1", NOW, lambda kept: kept.starts.append({"e": "2026-11-21T02:00:00Z"}))
    assert table.puts == []  # its broken pattern and its past starts are still there
    assert json.loads(table.item["record"]["S"])["broken"] == ["UTC 02:00"]


def test_a_record_read_is_changed_and_kept() -> None:
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    log.update("i-1", NOW, lambda kept: kept.starts.append({"e": "2026-11-21T02:00:00Z"}))
    [put] = table.puts
    record = json.loads(put["record"]["S"])
    assert record["broken"] == ["UTC 02:00"]
    assert [s["e"] for s in record["starts"]] == ["2026-11-20T02:00:00Z", "2026-11-21T02:00:00Z"]


def test_an_unreadable_record_reads_as_empty_for_the_learning() -> None:
    log = StartLog(Table(failures=1), "costguard-state")  # type: ignore[arg-type]
    assert log.read("i-1") == StartRecord()


def test_a_start_is_vouched_for_by_a_promise_or_in_an_older_record_by_the_stop_it_recorded() -> None:
    start_at, stopped_at = datetime(2026, 11, 22, 1, 45, tzinfo=UTC), datetime(2026, 11, 21, 4, 0, tzinfo=UTC)
    promised = StartRecord()
    promised.promise("2026-11-21T01:45:00Z")
    promised.promise("2026-11-22T01:45:00Z")
    assert promised.vouches(start_at, stopped_at)
    assert not promised.vouches(start_at + timedelta(hours=1), stopped_at)  # a time written by someone else
    older = StartRecord(stopped_at="2026-11-21T04:00:00Z")  # kept before promises were: its stop is the machine's
    assert older.vouches(start_at, stopped_at)
    assert not older.vouches(start_at, stopped_at + timedelta(hours=1))
    assert not StartRecord().vouches(start_at, stopped_at)  # nothing kept at all


def test_promises_are_kept_with_the_record_the_last_ten() -> None:
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    for day in range(1, 13):
        assert log.update("i-1", NOW, lambda kept, d=day: kept.promise(f"2026-11-{d:02d}T01:45:00Z"))
    promised = log.read("i-1").promised or []
    assert promised == [f"2026-11-{d:02d}T01:45:00Z" for d in range(3, 13)]
    assert log.read("i-1").broken == ["UTC 02:00"]


def test_a_start_promised_for_a_scheduled_job_is_kept_as_such_and_its_start_never_judged() -> None:
    # A job that begins by waiting shows no work in its machine's metrics: its start is not a learned
    # pattern's, to be judged "found no work" and break the pattern.
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    assert log.update("i-1", NOW, lambda kept: kept.promise("2026-11-21T21:45:00Z", job=True))
    assert log.update("i-1", NOW, lambda kept: kept.promise("2026-11-22T01:45:00Z"))
    record = log.read("i-1")
    assert record.for_jobs == ["2026-11-21T21:45:00Z"]
    log.made("i-1", "2026-11-21T22:00:00Z", "2026-11-21T21:45:00Z", record, NOW, job=True)
    log.made("i-1", "2026-11-22T02:00:00Z", "2026-11-22T01:45:00Z", record, NOW)
    starts = log.read("i-1").starts
    assert [s.get("o", "") for s in starts[-2:]] == ["job", ""]


def test_a_start_promised_for_a_persons_working_day_is_kept_as_such_and_its_start_never_judged() -> None:
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    assert log.update("i-1", NOW, lambda kept: kept.promise("2026-11-23T07:45:00Z", day=True))
    record = log.read("i-1")
    assert (record.for_days, record.for_jobs, record.promised) == (["2026-11-23T07:45:00Z"], [], record.for_days)
    log.made("i-1", "2026-11-23T08:00:00Z", "2026-11-23T07:45:00Z", record, NOW, day=True)
    assert [s.get("o", "") for s in log.read("i-1").starts] == ["wasted", "day"]  # the kept one, then this one


def test_only_a_start_costguards_own_call_made_for_a_working_day_counts_as_readying_the_machine() -> None:
    """A start found made (a sweep killed after its call, or a person's start near the promised time) may be a
    person's: the scarce machine it started is then not taken for one nobody came to (rules/capacity.py)."""
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    record = log.read("i-1")
    log.made("i-1", "2026-11-23T08:00:00Z", "2026-11-23T07:00:00Z", record, NOW, day=True, called=True)
    log.made("i-1", "2026-11-24T08:00:00Z", "2026-11-24T07:40:00Z", record, NOW, day=True)  # found made
    log.made("i-1", "2026-11-25T02:00:00Z", "2026-11-25T01:15:00Z", record, NOW, called=True)  # for a run
    kept = log.read("i-1")
    assert kept.readied() == [datetime(2026, 11, 23, 7, 0, tzinfo=UTC)]
    assert len(kept.started()) == 4  # with the one the table held


def test_a_start_made_for_a_job_is_not_judged_against_a_pattern() -> None:
    made = [LearnedStart(NOW - timedelta(days=1), "job"), LearnedStart(NOW - timedelta(days=2), "")]
    found = learn([], NOW, made=made)
    assert [expected for expected, _ in found.outcomes] == [NOW - timedelta(days=2)]


def test_a_start_promised_before_its_night_run_keeps_the_run_it_is_tried_again_until_the_last_ten() -> None:
    table = Table()
    log = StartLog(table, "costguard-state")  # type: ignore[arg-type]
    for day in range(1, 13):
        start, run = f"2026-11-{day:02d}T17:00:00Z", f"2026-11-{day + 1:02d}T00:45:00Z"
        assert log.update("i-1", NOW, lambda kept, s=start, r=run: kept.promise(s, day=True, until=r))
    assert log.update("i-1", NOW, lambda kept: kept.promise("2026-11-13T07:45:00Z", day=True))  # no run: none kept
    assert log.update("i-1", NOW, lambda kept: kept.promise("2026-11-12T17:00:00Z", day=True))  # promised again
    assert log.read("i-1").until(datetime(2026, 11, 12, 17, 0, tzinfo=UTC)) is None  # ... without its run
    assert log.update(
        "i-1", NOW, lambda kept: kept.promise("2026-11-12T17:00:00Z", day=True, until="2026-11-13T00:45:00Z")
    )
    record = log.read("i-1")
    assert len(record.for_nights) == 10, record.for_nights
    assert record.until(datetime(2026, 11, 12, 17, 0, tzinfo=UTC)) == datetime(2026, 11, 13, 0, 45, tzinfo=UTC)
    assert record.until(datetime(2026, 11, 2, 17, 0, tzinfo=UTC)) is None  # the oldest two dropped
    assert record.until(datetime(2026, 11, 13, 7, 45, tzinfo=UTC)) is None
    table.item = {"record": {"S": json.dumps({"for_nights": {"2026-11-12T17:00:00Z": 5, "x": "y"}})}}
    assert log.read("i-1").for_nights == {"x": "y"}  # what is not a pair of strings is not costguard's
    assert log.read("i-1").until(datetime(2026, 11, 12, 17, 0, tzinfo=UTC)) is None
