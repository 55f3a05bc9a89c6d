"""The harder week (issue 44) of the bench's world (testing/worlds/week.py) and harness (testing/week.py): each
knob off by default, so that today's week and its figures stay as they are, and all on with `harder()`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from testing.week import GPU_MEMORY_METRIC, Fleet, WeekMetrics
from testing.worlds.week import World, harder

HOUSEKEEPING = {"*/10 * * * *", "0 * * * *", "@reboot"}


@pytest.fixture(scope="module")
def hard() -> World:
    return World(7, **harder())


@pytest.fixture(scope="module")
def today() -> World:
    return World(7)


def test_automation_boxes_of_the_harder_week_have_housekeeping_lines_beside_their_job(hard: World) -> None:
    for machine in (m for m in hard.machines if m.automation):
        schedules = {str(job["s"]) for job in machine.jobs}
        assert schedules >= HOUSEKEEPING, machine.persona
    assert all(not m.jobs for m in hard.machines if not m.automation)


def test_automation_clocks_of_the_harder_week_are_utc_on_some_boxes_and_the_owners_zone_on_others(
    hard: World,
) -> None:
    crontab = [m for m in hard.machines if m.persona in ("pipeline", "waiting_pipeline")]
    assert {m.clock for m in crontab} == {"UTC", ""}
    utc = next(m for m in crontab if m.persona == "pipeline" and m.clock == "UTC")
    first_run = next(i for i, s in enumerate(utc.slots) if s.work == "nightly pipeline")
    assert hard.at(first_run).hour == 1, "its 01:00 job runs at 01:00 of its UTC clock"
    assert hard.report(utc, first_run, cgroups=True)["jobs"]["tz"] == "UTC"  # type: ignore[index]


def test_automation_jobs_of_the_harder_week_often_begin_by_waiting_with_gpu_memory_held(hard: World) -> None:
    waits = [
        s
        for m in hard.machines
        if m.persona in ("nightly_utc", "nightly_local")
        for s in m.slots
        if s.work == "queue wait"
    ]
    assert waits, "some nightly jobs wait before they work"
    assert all(s.gpu_holder and max(s.gpu, default=0.0) == 0.0 for s in waits)


def test_todays_week_has_none_of_the_harder_knobs(today: World) -> None:
    automation = [m for m in today.machines if m.automation]
    assert not any(str(job["s"]) in HOUSEKEEPING for m in automation for job in m.jobs)
    assert not any(s.work == "queue wait" for m in automation for s in m.slots)
    assert not any(m.persona == "waiting_pipeline" for m in today.machines)


def test_a_fresh_accounts_week_has_no_metrics_before_its_one_day_of_history(today: World) -> None:
    fleet = Fleet(today, 7, 0.0, history=timedelta(days=1))
    metrics = WeekMetrics(fleet)
    machine = today.machines[0]
    key = ("AWS/EC2", "CPUUtilization", frozenset({("InstanceId", machine.instance_id)}))
    week = today.start.timestamp()
    before = metrics.points(key, (today.start - timedelta(days=3)).timestamp(), week, 300, "Maximum")
    assert before is not None
    times, _ = before
    assert times, "a day of history"
    assert min(times) >= (today.start - timedelta(days=1)).timestamp()
    assert fleet.launched[machine.instance_id] == today.start - timedelta(days=1)


def test_gpu_memory_is_published_only_where_the_agents_configuration_collects_it(hard: World) -> None:
    waiting = next(m for m in hard.machines if m.persona == "waiting_pipeline")
    dims = frozenset({("InstanceId", waiting.instance_id), ("index", "0"), ("name", "NVIDIA"), ("arch", "Ampere")})
    key = ("CWAgent", GPU_MEMORY_METRIC, dims)
    wait = next(i for i, s in enumerate(waiting.slots) if s.work == "waiting for upstream data")
    start, end = hard.at(wait).timestamp(), hard.at(wait + 6).timestamp()
    without = Fleet(hard, 7, 0.0)
    without.now = hard.at(wait + 12)
    assert WeekMetrics(without).points(key, start, end, 300, "Maximum") is None
    assert not any(name == GPU_MEMORY_METRIC for _, name, _ in WeekMetrics(without).listed(False))
    with_memory = Fleet(hard, 7, 0.0, gpu_memory=True)
    with_memory.now = hard.at(wait + 12)
    points = WeekMetrics(with_memory).points(key, start, end, 300, "Maximum")
    assert points is not None
    assert len(points[1]) == 6
    assert min(points[1]) >= 30000, "a waiting job's GPU memory held, at 0 % utilization"
    assert any(name == GPU_MEMORY_METRIC for _, name, _ in WeekMetrics(with_memory).listed(False))
