"""The past of the machines a sweep is about to warn or stop (and only those): two weeks of quarter-hourly GPU
and CPU in as few GetMetricData calls as CloudWatch allows, their starts and stops, and the learned starts
costguard made for them; what that says of each (`Past`: its recurring work, its person's day, a stop its
person undid) is for the pipeline's rules (idle/rules/pipeline.py) to weigh. Nothing is written here: the
learned starts judged on the way are kept by acts/kept.py."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from costguard.aws.cloudwatch.reads import MetricReader, series_per_call
from costguard.aws.cloudwatch.series import (
    CORE_METRIC,
    GPU_MEMORY_METRIC,
    GPU_METRIC,
    GPU_NAMESPACE,
    Dimensions,
    MetricRef,
)
from costguard.core import formatting
from costguard.core.keeping import kept_for_runs, nothing_unseen, starts_declined
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.series import Point, Signal
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.arrival import Arrival, arrival, undone_share
from costguard.idle.rules.automation import NightWork, night_work, on_its_clocks, unseen_nights
from costguard.idle.rules.capacity import owners_hours, workdays
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.pipeline import Past
from costguard.idle.rules.recurring import (
    HISTORY_DAYS,
    Learned,
    LearnedStart,
    Quarter,
    learn,
    learns,
    quarters_of,
)
from costguard.idle.rules.restarts import undone_stop
from costguard.state.history import MachineHistory
from costguard.state.startlog import StartLog, StartRecord

PERIOD = 900  # quarter-hours: two weeks are 1,344 points a series, 75 series a call


class Learner:
    def __init__(
        self,
        *,
        metrics: MetricReader,
        history: MachineHistory,
        starts: StartLog,
        policy: IdlePolicy,
        list_price: Callable[[Instance], float | None] | None = None,
    ) -> None:
        """`list_price`: a machine's on-demand price an hour (what a start before its person's day is priced at:
        the bill's price, read after, is never more), None where unknown."""
        self.fortnights, self.history, self.starts = Fortnights(metrics, policy), history, starts
        self.policy = policy
        self.list_price = list_price or (lambda _: None)

    def past(
        self,
        decided: Sequence[tuple[Instance, Decision]],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        now: datetime,
        *,
        blind: Collection[str] = (),
        clocks: Mapping[str, str] | None = None,
        zones: Mapping[str, str] | None = None,
        memory_series: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> dict[str, Past]:
        """What the last two weeks say of each machine a warning or a stop would stop: its recurring work, its
        person's day, whether its fortnight could be read in full; for a machine its person started again soon
        after costguard's stop, when (restarts.py: its start log says which starts were costguard's; unread,
        every start is taken for a person's) and its list price; for one that cannot answer the activity check
        (`blind`), the work it runs by itself at night (rules/automation.py); and for a box that runs by itself
        (`clocks`: the zone of its own clock), its nights read on that clock, or all of them while it is new. A
        machine that cannot answer has its nights read on its owner's clock (`zones`: the zone its owner set in
        Slack), else the team's: an evening job is its owners' evening, not the team's. Its nights are read with
        its GPUs' memory used where the agent publishes it (`memory_series`, discovered as the GPUs are): a job that
        begins by waiting holds its memory at 0 %, and its wait is when its work began."""
        clocks, zones = clocks or {}, zones or {}
        memory = {iid: d for iid, d in (memory_series or {}).items() if iid in blind}
        stops = [(i, d) for i, d in decided if d.action in (Action.WARN, Action.STOP) and d.will_stop]
        learning = {i.instance_id for i, _ in stops if learns(i, self.policy)}
        targets = [i for i, _ in stops if i.instance_id in learning or i.instance_id in {*blind, *clocks}]
        # Started again soon after costguard's stop, by a person unless its start log says costguard did.
        undone = [i for i, d in decided if d.action in (Action.WARN, Action.STOP) and undone_stop(i, [], self.policy)]
        if not targets and not undone:
            return {}
        ids = [i.instance_id for i in targets]
        records = self.starts.read_many(list(dict.fromkeys(ids + [i.instance_id for i in undone])))
        undid = {i.instance_id: undone_stop(i, records[i.instance_id].started(), self.policy) for i in undone}
        histories = self.history.changes_of(ids) if ids else {}
        out: dict[str, Past] = {}
        for run, quarters, failed, held in self.fortnights.read(targets, gpu_series, now, memory=memory):
            for instance in run:
                iid = instance.instance_id
                people = _people_starts(histories[iid], records[iid])  # read once, for all
                night, aside = None, False
                if iid in blind:
                    owner = owners_clock(zones.get(iid, ""), self.policy.team_timezone)
                    nights = held.get(iid, quarters[iid])
                    night, aside = self._blind_nights(instance, nights, people, records[iid], owner, now)
                elif iid in clocks:
                    ours, clock = records[iid].started(), clocks[iid]
                    night = night_work(quarters[iid], people, now, clock, ours=ours, blind=False)
                    night = night or unseen_nights(quarters[iid], now, clock)
                days = workdays(
                    quarters[iid],
                    now,
                    owners_hours(instance, self.policy.team_timezone),
                    running_at=people,
                    ours=records[iid].readied(),
                    booted=records[iid].day_starts(),
                    launched=instance.launch_time,
                )
                if iid not in learning:  # only its nights: costguard learns nothing else of it
                    out[iid] = Past(night=night, nights_unread=iid in failed, nights_aside=aside)
                    continue
                out[iid] = Past(
                    workdays=days,
                    learned=self._learn(instance, quarters[iid], records[iid], people, now),
                    unread=iid in failed,
                    arrival=self._arrival(instance, quarters[iid], histories[iid], people, now),
                    night=night,
                    nights_unread=iid in failed and (iid in blind or iid in clocks),
                    nights_aside=aside,
                )
        by_id = {i.instance_id: i for i in undone}
        for iid, at in undid.items():
            price = self.list_price(by_id[iid]) if at else None  # its hold: until its idle hours pay
            out[iid] = replace(out.get(iid, Past()), undone=at, usd_per_hour=price)
        return out

    def _arrival(
        self,
        instance: Instance,
        quarters: list[Quarter],
        history: Sequence[tuple[datetime, str]],
        people: Sequence[datetime],
        now: datetime,
    ) -> Arrival | None:
        """When starting the machine before its person's weekday pays (idle/rules/arrival.py), if it does: not
        where its price is unknown or nothing, nor where learned starts are off for the deployment or for it
        (keeping it for its runs asks for starts before its runs, not for its person's day)."""
        usd_per_hour = self.list_price(instance)
        if not usd_per_hour or self.policy.person_hour_usd <= 0:
            return None
        if not self.policy.learned_starts or starts_declined(instance.tags):
            return None
        undone = undone_share(history, people)
        found = arrival(quarters, now, usd_per_hour=usd_per_hour, policy=self.policy, running_at=people, undone=undone)
        if found is not None:
            logger.info("person's weekday", learned=found.describe(), saves_usd=found.net_usd)
        return found

    def _blind_nights(  # noqa: PLR0917
        self,
        instance: Instance,
        nights: Sequence[Quarter],
        people: Sequence[datetime],
        record: StartRecord,
        owner: str,
        now: datetime,
    ) -> tuple[NightWork | None, bool]:
        """A machine that cannot answer: its night work on its owner's clock and the team's, and whether its owner's
        word (`costguard:unseen-work=none`) set a hold aside (said on its trail: pipeline.py)."""
        mine = list(dict.fromkeys([owner, self.policy.team_timezone]))
        ours, for_runs, vouched = record.started(), kept_for_runs(instance.tags), nothing_unseen(instance.tags)
        night = on_its_clocks(nights, people, now, mine, ours=ours, for_runs=for_runs, nothing_unseen=vouched)
        aside = vouched and night is None and on_its_clocks(nights, people, now, mine, ours=ours) is not None
        return night, aside

    def _learn(
        self,
        instance: Instance,
        quarters: list[Quarter],
        record: StartRecord,
        running: Sequence[datetime],
        now: datetime,
    ) -> Learned:
        """`running`: the machine's starts people made (`_people_starts`)."""
        iid = instance.instance_id
        made = [
            LearnedStart(e, str(s.get("o", "")))
            for s in record.starts
            if (e := formatting.parse_time(s.get("e"))) is not None
        ]
        zones = ("UTC", self.policy.team_timezone)
        found = learn(quarters, now, zones=zones, running_at=running, made=made, broken=record.broken)
        logger.info("recurring work", instance_id=iid, learned=found.reason)
        return found


class Fortnights:
    """Two weeks of quarter-hours of the machines about to be warned or stopped, one GetMetricData answer
    at a time."""

    def __init__(self, metrics: MetricReader, policy: IdlePolicy) -> None:
        self.metrics, self.policy = metrics, policy

    def read(
        self,
        instances: Sequence[Instance],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        now: datetime,
        *,
        memory: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> Iterator[tuple[list[Instance], dict[str, list[Quarter]], set[str], dict[str, list[Quarter]]]]:
        """The machines in runs of one GetMetricData call's series, each run with its quarter-hours, the
        machines a series of which CloudWatch could not answer, and the quarter-hours with GPU memory held counted
        as busy of those whose `memory` series are read: the points of one answer at a time, not of the fleet
        (1,000 machines of 4 GPUs are 8 million points: 800 MB of Python objects at once)."""
        memory = memory or {}
        start = now - timedelta(days=HISTORY_DAYS)
        per_call = series_per_call(start, now, PERIOD)
        run: list[Instance] = []
        refs: list[MetricRef] = []
        for instance in instances:
            mine = self.refs(instance, gpu_series, memory)
            if run and len(refs) + len(mine) > per_call:
                yield run, *self._fetch(run, refs, start, now)
                run, refs = [], []
            run.append(instance)
            refs += mine
        if run:
            yield run, *self._fetch(run, refs, start, now)

    def _fetch(
        self, run: Sequence[Instance], refs: Sequence[MetricRef], start: datetime, now: datetime
    ) -> tuple[dict[str, list[Quarter]], set[str], dict[str, list[Quarter]]]:
        points, failed = self.metrics.fetch(refs, start, now, period=PERIOD)
        out: dict[str, list[Quarter]] = {}
        held: dict[str, list[Quarter]] = {}
        for instance in run:
            mine = {ref: p for ref, p in points.items() if ref.instance_id == instance.instance_id}
            gpus: list[list[Point]] = [p for r, p in mine.items() if r.signal is Signal.GPU]
            core = next((p for r, p in mine.items() if r.signal is Signal.BUSIEST_CORE), [])
            cpu = next((p for r, p in mine.items() if r.signal is Signal.CPU), [])
            out[instance.instance_id] = quarters_of(gpus, core, cpu, self.policy, instance.vcpu_count)
            if memory := [p for r, p in mine.items() if r.signal is Signal.GPU_MEMORY]:
                vcpus = instance.vcpu_count
                held[instance.instance_id] = quarters_of(gpus, core, cpu, self.policy, vcpus, memory=memory)
        return out, {ref.instance_id for ref in failed}, held

    def refs(
        self,
        instance: Instance,
        gpu_series: Mapping[str, Sequence[Dimensions]],
        memory: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> list[MetricRef]:
        iid = instance.instance_id
        ec2_dims: Dimensions = (("InstanceId", iid),)
        refs = [
            MetricRef(iid, Signal.GPU, "GPU", GPU_NAMESPACE, GPU_METRIC, dims, "Maximum")
            for dims in gpu_series.get(iid, [])
        ]
        refs += [
            MetricRef(iid, Signal.GPU_MEMORY, "GPU memory", GPU_NAMESPACE, GPU_MEMORY_METRIC, dims, "Maximum")
            for dims in (memory or {}).get(iid, [])
        ]
        refs.append(MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", ec2_dims, "Average"))
        refs.append(MetricRef(iid, Signal.BUSIEST_CORE, "core", GPU_NAMESPACE, CORE_METRIC, ec2_dims, "Average"))
        return refs


def owners_clock(zone: str, team_zone: str) -> str:
    """The zone an owner set in Slack where it can be read, else the team's."""
    return formatting.zone_of(zone, default=team_zone).key


def _people_starts(history: Sequence[tuple[datetime, str]], record: StartRecord) -> list[datetime]:
    """The starts people made (costguard's own learned starts say nothing new about the work)."""
    ours = record.started()
    return [
        at for at, state in history if state == "running" and all(abs((at - t).total_seconds()) > 600 for t in ours)
    ]
