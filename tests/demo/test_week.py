"""The demo's week (demo/week.py): the fortnight the weekly digest compares holds the same fleet in both weeks,
and the deep dive's quarter is the week the weekly digest kept, repeated, with its days moved."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from costguard.digest.handoff import AccountWeek, decode, encode
from demo import fleet, week

STORY = datetime(2026, 11, 16, 8, 0, tzinfo=UTC)  # a Monday
BEGAN = datetime(2026, 11, 11, tzinfo=UTC)  # the first evening swept
KIM = fleet.Machine("kim-notebook", fleet.HOME, "g5.12xlarge", "", gpu_pattern="idle", instance_id="i-kim")


@pytest.fixture(autouse=True)
def story_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "_NOW", [STORY])


def test_a_machine_the_sweeps_saw_works_the_same_office_days_in_the_week_before_as_in_the_week() -> None:
    swept = week.Week(swept={KIM.instance_id}, began=BEGAN)
    last_week = datetime(2026, 11, 3, 12, 30, tzinfo=UTC)  # a Tuesday
    assert swept.fortnight(KIM, last_week) == "busy"
    assert swept.fortnight(KIM, last_week.replace(hour=23)) == "idle"  # nothing stopped it at night
    assert swept.fortnight(KIM, datetime(2026, 11, 7, 12, 30, tzinfo=UTC)) == "idle"  # a Saturday
    assert [swept.fortnight(KIM, BEGAN + timedelta(hours=h)) for h in (12, 20)] == [None, None]  # the sweeps' own


def test_a_machine_the_sweeps_did_not_see_has_only_what_the_fleet_s_pattern_names() -> None:
    unseen = week.Week(swept=set(), began=BEGAN)
    assert unseen.fortnight(KIM, datetime(2026, 11, 3, 12, 30, tzinfo=UTC)) is None
    mystery = fleet.Machine("mystery-west", fleet.OTHER, "g4dn.xlarge", "", instance_id="i-m")
    assert unseen.fortnight(mystery, datetime(2026, 11, 3, 12, 30, tzinfo=UTC)) == "idle"


class Records:
    """WeekRecords' two calls, kept in a dict by (account, first day)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, date], str] = {}

    def keep(self, account: str, start: datetime, body: str) -> None:
        self.kept[(account, start.date())] = body

    def between(self, account: str, start: date, end: date) -> list[str]:
        return [b for (a, d), b in sorted(self.kept.items()) if a == account and start <= d < end]


def a_week(start: datetime) -> AccountWeek:
    days = tuple((start.date() + timedelta(days=n), 10.0, 4.0) for n in range(7))
    return AccountWeek(
        account="123456789012",
        label="research",
        start=start,
        end=start + timedelta(days=7),
        regions=("us-east-1",),
        machines=23,
        gpu_hours=70.0,
        idle_gpu_hours=28.0,
        waste_usd=1234.0,
        avg_gpu_util=39.0,
        warned=37,
        stopped=30,
        kept=2,
        saved_hours=559.0,
        saved_usd=5129.0,
        spend_usd=3552.0,
        days=days,
        top_owners=(),
        gaps=(),
        days_usd=tuple((d, 100.0) for d, _, _ in days),
    )


def test_the_quarter_is_the_kept_week_repeated_into_each_week_that_starts_in_it_its_days_moved() -> None:
    records: Any = Records()  # WeekRecords' calls, without DynamoDB
    kept = a_week(datetime(2026, 11, 9, tzinfo=UTC))
    records.keep("123456789012", kept.start, encode(kept))
    assert week.quarter(records, "123456789012", STORY) == 13  # Mondays 3 Aug to 26 Oct 2026
    quarter = [decode(b) for b in records.between("123456789012", date(2026, 8, 1), date(2026, 11, 1))]
    assert [w.start.date() for w in quarter] == [date(2026, 8, 3) + timedelta(weeks=n) for n in range(13)]
    for moved in quarter:
        shift = kept.start - moved.start
        assert moved.days[0][0] == moved.start.date()
        assert moved.days_usd[-1][0] == moved.end.date() - timedelta(days=1)
        expected: Any = replace(
            kept,
            start=moved.start,
            end=kept.end - shift,
            days=tuple((d - shift, u, i) for d, u, i in kept.days),
            days_usd=tuple((d - shift, x) for d, x in kept.days_usd),
        )
        assert moved == expected  # the same figures
