"""The digest's arithmetic on hand-built weeks: every expected figure is worked out here, by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, cast

import pytest

from costguard.aws.cloudwatch.reads import MetricReader, series_per_call
from costguard.aws.cloudwatch.series import GpuSeriesFinder
from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.commitments import CommitmentUse
from costguard.digest.owners import owner_message
from costguard.digest.weekly.hours import iter_hours
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize, worst_idle
from costguard.digest.weekly.rules.grid import Hour, HourFolder
from costguard.digest.weekly.rules.keeps import OutlivedKeep, outlived_keeps
from costguard.digest.weekly.rules.messages import digest_message, digest_thread
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.summary import owner_weeks
from costguard.digest.weekly.savings import saved_by_stops
from costguard.state.entries import Entry, EntryKind
from testing.aws.cloudwatch import CloudWatchClient
from testing.hour_grids import hours_from_points
from testing.worlds.hourly import HourlyFleet
from tests.unit.digest.organization.test_rules import member_data

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7)
POLICY = IdlePolicy()


def said(data: DigestData) -> str:
    """Everything the channel reads of the week: the post and its thread."""
    messages = [digest_message(data), *(r.message for r in digest_thread(data))]
    return json.dumps([m.text for m in messages] + [m.slack_blocks() for m in messages])


def hours(
    day: int,
    first: int,
    count: int,
    *,
    cpu: float,
    gpu_max: float | None,
    gpu_avg: float | None,
    core: float | None = None,
) -> list[Hour]:
    """`core` the agent's busiest core, where the machine publishes it."""
    base = START + timedelta(days=day, hours=first)
    return [Hour(base + timedelta(hours=k), cpu, gpu_max, gpu_avg, core_max=core) for k in range(count)]


def machine(
    iid: str,
    owner: str,
    gpus: int,
    price: float,
    hs: list[Hour],
    *,
    team: str = "",
    telemetry: bool = True,
    state: str = "running",
) -> InstanceWeek:
    return InstanceWeek(iid, "g5.12xlarge", "us-east-1", owner, team, gpus, price, telemetry, state, tuple(hs))


def test_busy_and_idle_hours_become_gpu_hours_waste_and_utilization() -> None:
    # alice: 4 GPUs at $5.672/h; Monday 10 busy hours (avg 80 %), Tuesday 6 idle hours (avg 1 %, CPU 2 %
    # with no core over 6 %: her agent publishes the busiest core).
    alice = machine(
        "i-a",
        "alice",
        4,
        5.672,
        hours(0, 8, 10, cpu=40, gpu_max=95, gpu_avg=80, core=100) + hours(1, 8, 6, cpu=2, gpu_max=3, gpu_avg=1, core=6),
    )
    # bob: 1 GPU at $1.006/h; Monday 4 idle hours (CPU 1 % of 48 vCPUs: under half a core, 1.04 %).
    bob = machine("i-b", "bob", 1, 1.006, hours(0, 0, 4, cpu=1, gpu_max=0.5, gpu_avg=0.5), team="vision")
    week = summarize([alice, bob], START, END, POLICY)

    assert week.fleet.instances == 2
    assert week.fleet.gpu_hours == 16 * 4 + 4 * 1  # 68
    assert week.fleet.idle_gpu_hours == 6 * 4 + 4 * 1  # 28
    assert week.fleet.waste_usd == pytest.approx(6 * 5.672 + 4 * 1.006)  # 38.056
    # utilization is averaged over running instance-hours: (10*80 + 6*1 + 4*0.5) / 20
    assert week.fleet.avg_gpu_util == pytest.approx(808 / 20)
    assert week.per_owner["alice"].waste_usd == pytest.approx(34.032)
    assert week.per_team == {"vision": week.per_team["vision"]}
    assert week.per_team["vision"].idle_gpu_hours == 4
    assert week.per_day[date(2026, 11, 16)] == (40.0, 4.0)  # alice's 10 busy hours * 4 GPUs; bob's 4 idle
    assert week.per_day[date(2026, 11, 17)] == (0.0, 24.0)
    assert len(week.per_day) == 7


def test_an_hour_without_gpu_data_is_never_idle_when_the_instance_has_gpu_telemetry() -> None:
    gap = machine("i-g", "carol", 8, 21.96, hours(2, 0, 5, cpu=1, gpu_max=None, gpu_avg=None))
    week = summarize([gap], START, END, POLICY)
    assert (week.fleet.gpu_hours, week.fleet.idle_gpu_hours, week.fleet.waste_usd) == (40, 0, 0)


def test_without_gpu_telemetry_an_hour_is_judged_on_cpu() -> None:
    # CPU 0.5 % of 48 vCPUs, no busiest core: under the 1.04 % one busy core cannot hide under
    blind = machine("i-n", "", 1, 0.8048, hours(3, 0, 3, cpu=0.5, gpu_max=None, gpu_avg=None), telemetry=False)
    week = summarize([blind], START, END, POLICY)
    assert week.fleet.idle_gpu_hours == 3
    assert week.per_owner["(no owner)"].waste_usd == pytest.approx(3 * 0.8048)


def test_hours_outside_the_week_do_not_count() -> None:
    early = machine(
        "i-e",
        "dave",
        1,
        1.0,
        hours(-1, 0, 5, cpu=1, gpu_max=1, gpu_avg=1) + hours(7, 0, 5, cpu=1, gpu_max=1, gpu_avg=1),
    )
    assert summarize([early], START, END, POLICY).fleet.instances == 0


def test_worst_idle_lists_running_machines_by_idle_cost() -> None:
    a = machine("i-a", "alice", 4, 5.672, hours(0, 0, 10, cpu=1, gpu_max=1, gpu_avg=1))  # $56.72 idle
    b = machine("i-b", "bob", 1, 1.006, hours(0, 0, 30, cpu=1, gpu_max=1, gpu_avg=1))  # $30.18 idle
    c = machine("i-c", "carol", 8, 21.96, hours(0, 0, 30, cpu=1, gpu_max=1, gpu_avg=1), state="stopped")
    week = summarize([a, b, c], START, END, POLICY)
    ranked = worst_idle([a, b, c], week)
    assert [(i.instance_id, h, round(d, 2)) for i, h, d in ranked] == [("i-a", 10, 136.13), ("i-b", 30, 24.14)]


def test_hours_are_built_from_hourly_series() -> None:
    t0, t1 = START, START + timedelta(hours=1)
    built = hours_from_points(
        cpu=[(t0, 5.0), (t1, 50.0)],
        gpu_max=[[(t0, 2.0), (t1, 90.0)], [(t0, 4.0)]],  # GPU 1 has no point at t1
        gpu_avg=[[(t0, 1.0), (t1, 70.0)], [(t0, 3.0)]],
    )
    # t0: neither GPU reached 5 %, so 0 in use; t1: GPU 1 is missing, so neither the maximum nor the count is known
    assert tuple(built) == (Hour(t0, 5.0, 4.0, 2.0, 0), Hour(t1, 50.0, None, 70.0, None))
    busy = hours_from_points(cpu=[(t0, 5.0)], gpu_max=[[(t0, 6.0)], [(t0, 4.9)], [(t0, 90.0)]], gpu_avg=[])
    assert busy[0].gpus_busy == 2


def test_savings_of_a_stop_pressed_in_slack_use_the_price_book() -> None:
    stopped_at = END - timedelta(hours=5)
    instance = Instance("i-s", "us-east-1", "g5.xlarge", "stopped", START)
    stop = Entry(
        at=stopped_at,
        kind=EntryKind.STOP_FROM_SLACK,
        instance_id="i-s",
        region="us-east-1",
        mode="enforce",
        instance_type="g5.xlarge",
    )  # Slack stops record no price
    hours, usd, _ = saved_by_stops([stop], {"i-s": instance}, END, PriceBook(None))  # the bundled $1.006/h
    assert (hours, round(usd, 2)) == (5.0, 5.03)


def test_a_keep_until_tomorrow_on_a_machine_whose_job_ended_an_hour_later_is_listed() -> None:
    # bob pressed "until tomorrow 09:00" at Monday 18:00; the job ran one more hour, then 14 idle hours.
    bob = machine(
        "i-b",
        "bob",
        4,
        5.672,
        hours(0, 18, 1, cpu=40, gpu_max=90, gpu_avg=85) + hours(0, 19, 14, cpu=1, gpu_max=0.5, gpu_avg=0.5),
    )
    pressed, until = START + timedelta(hours=18), START + timedelta(days=1, hours=9)
    [keep] = outlived_keeps([("i-b", "bob", pressed, until)], [bob], END, POLICY)
    assert keep == OutlivedKeep("i-b", "bob", until, kept_hours=15.0, idle_hours=14.0, waste_usd=14 * 5.672)


def test_a_keep_that_was_used_is_not_listed() -> None:
    alice = machine("i-a", "alice", 1, 1.0, hours(0, 18, 15, cpu=40, gpu_max=90, gpu_avg=85))
    keeps = [("i-a", "alice", START + timedelta(hours=18), START + timedelta(days=1, hours=9))]
    assert outlived_keeps(keeps, [alice], END, POLICY) == []


def test_a_fortnight_of_hours_is_read_299_series_a_call_the_datapoint_quota() -> None:
    start = datetime(2026, 11, 9, tzinfo=UTC)
    assert series_per_call(start, start + timedelta(days=14), 3600) == 100_800 // 337
    assert series_per_call(start, start + timedelta(hours=2), 300) == 500  # the query quota, for the sweep


def test_hour_grids_fold_each_answer_and_keep_missing_data_missing() -> None:
    folder = HourFolder(START, 3, gpus=2)
    folder.add_cpu([(START, 5.0), (START + timedelta(hours=1), 6.0), (START + timedelta(hours=9), 1.0)])
    folder.add_gpu_max([(START, 1.0), (START + timedelta(hours=1), 3.0)])
    folder.add_gpu_max([(START, 2.0)])  # the second GPU said nothing in hour 1
    folder.add_gpu_avg([(START, 1.0)])
    grid = folder.grid()
    assert list(grid) == [Hour(START, 5.0, 2.0, 1.0, 0), Hour(START + timedelta(hours=1), 6.0, None, None, None)]
    assert len(grid) == 2  # the point outside the fortnight is not kept


def test_the_fortnight_is_read_in_full_calls_and_an_instance_split_between_two_is_whole() -> None:
    now = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    start = now - timedelta(days=14)
    gpus = {f"i-{k:017x}": 8 for k in range(120)}  # 18 series an instance: 299 a call splits them
    instances = [Instance(iid, "us-east-1", "g5.12xlarge", "running", start - timedelta(days=1)) for iid in gpus]
    world = HourlyFleet(gpus, start, now)
    cloudwatch = CloudWatchClient(world)
    weeks = list(
        iter_hours(
            "us-east-1",
            instances,
            start,
            now,
            gpu_series=GpuSeriesFinder(cast(Any, cloudwatch)),
            metrics=MetricReader(cast(Any, cloudwatch), IdlePolicy()),
            prices=PriceBook(None),
            owner_tag_key="Owner",
            team_tag_key="Team",
        )
    )
    series = sum(2 + 2 * n for n in gpus.values())  # CPU, the busiest core, each GPU's maximum and mean
    assert cloudwatch.calls["GetMetricData"] == -(-series // series_per_call(start, now, 3600))  # the floor
    assert [w.instance_id for w in weeks] == list(gpus)
    assert all(len(w.hours) == len(world.times) for w in weeks)  # every hour of every instance, whole
    assert all(h.core_max is not None for w in weeks for h in w.hours)  # the busiest core, read with the rest
    assert all(w.gpus == gpus[w.instance_id] for w in weeks)


def test_an_owners_message_lists_their_keeps_that_sat_idle_and_nobody_elses() -> None:
    bob = machine("i-b", "bob", 4, 5.672, hours(0, 19, 14, cpu=1, gpu_max=0.5, gpu_avg=0.5))
    carol = machine("i-c", "carol", 1, 1.006, hours(0, 19, 3, cpu=1, gpu_max=0.5, gpu_avg=0.5))
    week = summarize([bob, carol], START, END, POLICY)
    until = START + timedelta(days=1, hours=9)
    data = DigestData(START, END, [bob, carol], {}, week, week, [], 0.0, 0.0, CommitmentUse(), None, None, {}, [], "O")
    data.outlived_keeps = [
        OutlivedKeep("i-b", "bob", until, kept_hours=15.0, idle_hours=14.0, waste_usd=79.41),
        OutlivedKeep("i-c", "carol", until, kept_hours=4.0, idle_hours=3.0, waste_usd=3.02),
    ]
    theirs = {w.owner: w for w in owner_weeks(data, email_domain="example.com")}
    assert theirs["bob"].email == "bob@example.com"
    text = json.dumps(owner_message([theirs["bob"]], {}, now=END).slack_blocks())
    keep = f"<!date^{int(until.timestamp())}^{{date_short_pretty}} at {{time}}|Tue 17 Nov 09:00 UTC>"
    assert f"`i-b` kept until {keep} sat idle 14 h of its 15 ($79.41)" in text  # in the reader's zone
    assert "i-c" not in text


def test_the_digest_says_how_many_learned_starts_were_made_wasted_and_the_gpu_hours_stopped_between_runs() -> None:
    data = member_data()
    start = Entry(
        START + timedelta(days=2, hours=1, minutes=45), EntryKind.LEARNED_START, "i-b", "eu-west-1", "enforce"
    )
    data.entries += [
        replace(start, gpu_hours=21.5),
        replace(start, at=start.at + timedelta(days=1), gpu_hours=22.0),
        replace(start, at=start.at + timedelta(days=2), gpu_hours=9.0, applied=False),  # dry-run: not made
        replace(start, kind=EntryKind.LEARNED_START_WASTED, at=start.at + timedelta(days=1, minutes=15)),
    ]
    text = said(data)
    assert "2 learned starts before recurring work (1 found no work), after 44 GPU-hours stopped between runs." in text
    assert "learned start" not in said(member_data())  # none: nothing said
    day = replace(start, kind=EntryKind.DAY_START, instance_id="i-c")
    data.entries += [day, replace(day, at=day.at + timedelta(days=1))]
    text = said(data)  # a start for a person's day is not a learned run's, and no run judges it
    assert "2 learned starts before recurring work (1 found no work)" in text
    assert "2 machines started before their person's working day." in text
    only = member_data()
    only.entries += [day]
    assert "learned start" not in said(only)
    assert "1 machine started before its person's working day." in said(only)


def test_the_digest_and_each_owners_week_say_how_many_idle_warnings_they_received() -> None:
    bob = machine("i-b", "bob", 4, 5.672, hours(0, 19, 14, cpu=1, gpu_max=0.5, gpu_avg=0.5))
    carol = machine("i-c", "carol", 1, 1.006, hours(0, 19, 3, cpu=1, gpu_max=0.5, gpu_avg=0.5))
    week = summarize([bob, carol], START, END, POLICY)

    def warned(iid: str, owner: str, day: int, applied: bool = True) -> Entry:
        at = START + timedelta(days=day)
        return Entry(at, EntryKind.WARN, iid, "us-east-1", "enforce", applied=applied, owner=owner)

    entries = [warned("i-b", "bob", 1), warned("i-b", "bob", 3), warned("i-b2", "bob", 3), warned("i-c", "carol", 2)]
    entries.append(warned("i-c", "carol", 4, applied=False))  # dry-run: not a warning anyone received
    data = DigestData(
        START, END, [bob, carol], {}, week, week, entries, 0.0, 0.0, CommitmentUse(), None, None, {}, [], "Owner"
    )

    channel = said(data)
    assert "*bob*: *$79.41* (56 idle GPU-h, 3 warnings)" in channel
    assert "*carol*: *$3.02* (3 idle GPU-h, 1 warning)" in channel
    theirs = {w.owner: w for w in owner_weeks(data, email_domain="")}
    assert "costguard warned you about 3 idle machines this week" in json.dumps(
        owner_message([theirs["bob"]], {}, now=END).slack_blocks()
    )
    assert "costguard warned you about 1 idle machine this week" in json.dumps(
        owner_message([theirs["carol"]], {}, now=END).slack_blocks()
    )  # her dry-run warning was none


def test_an_hour_is_idle_by_the_stoppers_rule_so_one_busy_core_under_a_low_average_is_work() -> None:
    from costguard.digest.weekly.rules.figures import is_idle  # noqa: PLC0415

    # g5.12xlarge, 48 vCPUs, its GPUs quiet. Without the busiest core, a CPU average of 5 % may be one
    # core at full load: the stopper's threshold is 50 / 48 = 1.04 %, so the hour is work. With the
    # busiest core published, the core decides (50 %) beside the CPU's 10 %.
    box = machine("i-1", "alice", 4, 5.672, [])
    assert not is_idle(Hour(START, 5.0, 0.5, 0.5), box, POLICY)
    assert is_idle(Hour(START, 1.0, 0.5, 0.5), box, POLICY)
    assert not is_idle(Hour(START, 5.0, 0.5, 0.5, core_max=80.0), box, POLICY)
    assert is_idle(Hour(START, 5.0, 0.5, 0.5, core_max=20.0), box, POLICY)
    # the week's figures, counted off the compact hour grid, say the same: of 5 % and 1 %, one idle hour
    at = [START + timedelta(hours=k) for k in range(2)]
    quiet = [[(t, 0.5) for t in at] for _ in range(4)]
    grid = hours_from_points(list(zip(at, [5.0, 1.0], strict=True)), quiet, quiet)
    week = summarize([replace(box, hours=grid)], START, END, POLICY)
    assert (week.fleet.gpu_hours, week.fleet.idle_gpu_hours) == (8.0, 4.0)
