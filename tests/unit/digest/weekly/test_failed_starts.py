"""Every start EC2 refused this week is in the digest: machine, owner, when, why, how it ended."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.records import Instance
from costguard.digest.owners import refused_starts_text
from costguard.digest.weekly.rules.starts import failed_starts
from costguard.state.entries import Entry, EntryKind
from testing.slack_text import as_read, dates_in, plain_times

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7)
REFUSED = "InsufficientInstanceCapacity in us-east-1a"


def failed(iid: str, day: int, until_hours: float) -> Entry:
    due = START + timedelta(days=day, hours=7)
    return Entry(
        at=due,
        kind=EntryKind.START_FAILED,
        instance_id=iid,
        region="us-east-1",
        mode="enforce",
        owner="alice@example.com",
        instance_type="p5.48xlarge",
        reason=REFUSED,
        until=(due + timedelta(hours=until_hours)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def machine(iid: str, state: str, launched: datetime) -> Instance:
    return Instance(iid, "us-east-1", "p5.48xlarge", state, launched)


def test_each_failed_start_says_how_it_ended_started_later_given_up_or_still_trying() -> None:
    retried = failed("i-a", 0, 2)
    # costguard's start entries are keyed by the time the start was for, whenever the try that made it was
    later = Entry(START + timedelta(hours=7), EntryKind.MORNING_START, "i-a", "us-east-1", "enforce")
    gave_up = failed("i-b", 1, 2)
    next_day = Entry(START + timedelta(days=2, hours=7), EntryKind.MORNING_START, "i-b", "us-east-1", "enforce")
    by_hand = failed("i-c", 2, 2)
    pending = failed("i-d", 6, 48)  # Sunday 07:00, costguard tries until Tuesday: after the week's end
    raw = {
        "i-b": machine("i-b", "stopped", START - timedelta(days=9)),
        "i-c": machine("i-c", "running", START + timedelta(days=2, hours=10)),
    }
    found = failed_starts([pending, by_hand, gave_up, next_day, later, retried], raw, END)
    # each end with its time, which every reader sees in their own zone
    assert [(f.instance_id, f.ended, f.ended_at) for f in found] == [
        ("i-a", "started by costguard on a later try", None),
        ("i-b", "not started: costguard gave up", START + timedelta(days=1, hours=9)),
        ("i-c", "running since", START + timedelta(days=2, hours=10)),
        ("i-d", "not started yet: costguard tries until", START + timedelta(days=8, hours=7)),
    ]
    assert {(f.owner, f.why, f.instance_type) for f in found} == {("alice@example.com", REFUSED, "p5.48xlarge")}


def test_the_failed_starts_section_names_machine_owner_when_why_and_end_each_time_in_the_readers_zone() -> None:
    text = refused_starts_text(failed_starts([failed("i-b", 1, 2)], {}, END))
    due, gave_up = (
        int((START + timedelta(days=1, hours=7)).timestamp()),
        int((START + timedelta(days=1, hours=9)).timestamp()),
    )
    assert json.dumps(text) == json.dumps(
        "*Failed starts* (1 start EC2 refused)\n"
        "• `i-b` p5.48xlarge (alice@example.com), "
        f"due <!date^{due}^{{date_short_pretty}} at {{time}}|Tue 17 Nov 07:00 UTC>: "
        "InsufficientInstanceCapacity in us-east-1a; not started: costguard gave up "
        f"<!date^{gave_up}^{{date_short_pretty}} at {{time}}|Tue 17 Nov 09:00 UTC>"
    )
    # an owner's own message does not name them
    assert "alice@example.com" not in refused_starts_text(failed_starts([failed("i-b", 1, 2)], {}, END), owners=False)


def test_the_last_refusal_s_time_is_in_each_reader_s_zone_as_the_sweep_recorded_it() -> None:
    entry = replace(failed("i-b", 1, 2), reason=f"{REFUSED}, last at 08:40 UTC")  # as idle/acts/refused.py writes it
    text = refused_starts_text(failed_starts([entry], {}, END))
    assert f"{REFUSED}, last at 08:40 UTC; not started" in as_read(text)
    assert int((START + timedelta(days=1, hours=8, minutes=40)).timestamp()) in dates_in(text)  # near its due 07:00
    assert not plain_times(text)
