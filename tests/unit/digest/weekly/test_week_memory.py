"""What the digest keeps of a fleet's week while it runs: little per machine, and the same figures."""

from __future__ import annotations

import ctypes
import sys
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from costguard.core.settings import IdlePolicy
from costguard.digest.weekly import hours
from costguard.digest.weekly.rules.advice import Observed, Weighing, observe, observe_one, weigh
from costguard.digest.weekly.rules.figures import InstanceWeek, settle, summarize
from costguard.digest.weekly.rules.grid import Hour

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7)
POLICY = IdlePolicy()


def idle_hours(day: int, first: int, count: int) -> list[Hour]:
    base = START + timedelta(days=day, hours=first)
    return [Hour(base + timedelta(hours=k), 1.0, 0.0, 0.0, 0, core_max=1.0) for k in range(count)]


def busy_hours(day: int, first: int, count: int) -> list[Hour]:
    base = START + timedelta(days=day, hours=first)
    return [Hour(base + timedelta(hours=k), 60.0, 90.0, 10.0, 1, core_max=90.0) for k in range(count)]


def box(iid: str, hours: list[Hour], price: float = 1.0) -> InstanceWeek:
    return InstanceWeek(iid, "g5.xlarge", "us-east-1", "alice", "ml", 1, price, True, "running", tuple(hours))


def test_each_day_of_a_machines_idle_hours_is_priced_on_the_bill_in_day_order() -> None:
    # 3 idle hours on Tuesday, none on Wednesday, 2 on Thursday; then a second machine idle 4 h on Monday
    first = box("i-1", [*idle_hours(1, 2, 3), *busy_hours(2, 9, 5), *idle_hours(3, 20, 2)])
    second = box("i-2", idle_hours(0, 0, 4))
    week = summarize([first, second], START, END, POLICY)
    settle(week, [replace(first, bill_usd_per_hour=2.5), replace(second, bill_usd_per_hour=0.5)])
    assert list(week.per_day_usd.items()) == [
        (date(2026, 11, 17), 7.5),
        (date(2026, 11, 19), 5.0),
        (date(2026, 11, 16), 2.0),
    ]
    assert week.fleet.waste_usd == 7.5 + 5.0 + 2.0


def test_a_machines_idle_days_take_a_few_bytes_of_the_week() -> None:
    every_day = [h for day in range(7) for h in idle_hours(day, 0, 20)]
    week = summarize([box("i-1", every_day)], START, END, POLICY)
    kept = week.idle_days_by_instance["i-1"]
    assert list(kept) == [20] * 7
    assert sys.getsizeof(kept) < 64  # a tuple of seven (day, hours) pairs and their tuples: about 600 bytes


def test_advice_weighed_a_machine_at_a_time_is_the_advice_of_the_fleet_at_once() -> None:
    # Office hours on weekdays, idle nights: working-hours advice for each, the largest saving first.
    fleet = [
        box(f"i-{n}", [h for day in range(7) for h in (*busy_hours(day, 9, 9), *idle_hours(day, 18, 6))], 1.0 + n)
        for n in range(3)
    ]
    weighing = Weighing(POLICY, lambda t, r: 1.006, frozenset())
    for machine in fleet:
        seen = observe_one(machine, START, END)
        assert seen is not None
        weighing.add(Observed(replace(machine, hours=()), seen.hours))
    one_at_a_time = weighing.weighed()
    at_once = weigh(observe(fleet, START, END), POLICY, lambda t, r: 1.006, exclude=frozenset())
    assert [a.instance.instance_id for a in one_at_a_time.schedules] == ["i-2", "i-1", "i-0"]
    assert [(a.kind, a.suggested, a.saving_usd, a.basis) for a in one_at_a_time.schedules] == [
        (a.kind, a.suggested, a.saving_usd, a.basis) for a in at_once.schedules
    ]
    assert one_at_a_time.schedules[0].instance.hours == ()  # the advice holds no machine's hours


class CLibrary:
    """A C library as ctypes opens it: glibc's has malloc_trim, others none."""

    def __init__(self, trims: bool) -> None:
        self.trimmed: list[int] = []
        if trims:
            self.malloc_trim = self.trimmed.append


def test_each_answer_s_freed_memory_is_handed_back_where_the_c_library_can(monkeypatch: pytest.MonkeyPatch) -> None:
    for trims, asked in ((True, [0]), (False, [])):
        library = CLibrary(trims)
        monkeypatch.setattr(ctypes, "CDLL", lambda name, opened=library: opened)
        hours._malloc_trim.cache_clear()
        hours.give_back()
        assert library.trimmed == asked
    hours._malloc_trim.cache_clear()
