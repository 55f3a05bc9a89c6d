"""The digest builds the stopper's judge once per kind of machine (its vCPUs, its GPU telemetry), however many
hours it judges: counting the week and weighing the advice ask it of every hour of a fleet's fortnight."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from costguard.core.idleness import sample_judge
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules import figures
from costguard.digest.weekly.rules.advice import observe, weigh
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize
from costguard.digest.weekly.rules.grid import HourFolder

START = datetime(2026, 11, 16, tzinfo=UTC)
POLICY = IdlePolicy()


def machine(n: int, instance_type: str, *, telemetry: bool = True) -> InstanceWeek:
    """A week of work from 09:00 to 17:00 and idle nights, every GPU reporting."""
    folder = HourFolder(START, 24 * 7, 4 if telemetry else 0)
    times = [START + timedelta(hours=k) for k in range(24 * 7)]
    working = [9 <= t.hour < 17 for t in times]
    folder.add_cpu_series(times, [60.0 if w else 1.0 for w in working])
    folder.add_core_series(times, [90.0 if w else 3.0 for w in working])
    for _ in range(4 if telemetry else 0):
        folder.add_gpu_max_series(times, [95.0 if w else 0.0 for w in working])
        folder.add_gpu_avg_series(times, [80.0 if w else 0.0 for w in working])
    grid = folder.grid()
    return InstanceWeek(f"i-{n}", instance_type, "us-east-1", "ana", "nlp", 4, 5.672, telemetry, "running", grid)


def test_a_fleets_week_is_judged_with_one_judge_per_kind_of_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[int, bool]] = []
    real = sample_judge

    def counted(policy: IdlePolicy, *, vcpus: int, gpu_telemetry: bool) -> Any:
        built.append((vcpus, gpu_telemetry))
        return real(policy, vcpus=vcpus, gpu_telemetry=gpu_telemetry)

    monkeypatch.setattr(figures, "sample_judge", counted)
    monkeypatch.setattr(figures, "_JUDGES", {})
    fleet = [machine(n, "g5.12xlarge") for n in range(20)] + [machine(20 + n, "g5.48xlarge") for n in range(5)]
    fleet += [machine(30, "g5.12xlarge", telemetry=False)]
    end = START + timedelta(days=7)
    week = summarize(fleet, START, end, POLICY)
    weighed = weigh(observe(fleet, START, end), POLICY, lambda t, r: 5.672, exclude=frozenset())
    assert sorted(built) == [(48, False), (48, True), (192, True)]
    assert week.fleet.idle_instance_hours == 26 * 16 * 7  # each machine's nights, judged by its own judge
    # every machine with GPU telemetry keeps office hours: each told the working hours that say so
    assert len(weighed.schedules) == 25
    assert len({a.suggested for a in weighed.schedules}) == 1
