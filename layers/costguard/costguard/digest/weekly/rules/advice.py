"""Right-sizing and Spot advice from the week's hours. Pure: hours and prices in, suggestions out.

Three suggestions, each resting on figures it states, each only for a machine a week of data supports
(at least 24 hours with every GPU reporting, on at least 5 of the week's 7 days):

- **Fewer GPUs.** A multi-GPU machine whose busiest hour used k of its n GPUs all week: the smallest
  size of its family with k GPUs and the vCPUs its busiest hour needed, with the price difference.
  (Cost grows with the GPUs; training speed does not: about 5x for 8x the GPUs.)
- **A cheaper GPU.** A machine whose GPUs averaged under 20 % while it worked (its hours that were not
  idle): the cheapest type with as many GPUs, at least as much GPU memory, and the vCPUs it needed.
- **Spot.** An on-demand machine whose work this week came in runs of 2 to 6 hours, and never in a longer
  one: the Spot price of its type in its zone, and what those hours would have cost there, with the plain
  warning that Spot capacity can be taken back with two minutes' notice. Spot takes a machine back in the
  middle of a run; a job that saves no checkpoints starts that run again. costguard sees no checkpoints
  (no metric or tag says a job saves them), so it advises Spot only where the longest run it would lose
  is a few hours: a machine that worked a run of more than 6 hours without a break (a training run of
  days) gets no Spot advice, however much Spot would save, and runs under 2 hours (a session, not a job)
  do not count towards it.

A machine gets at most one size suggestion (the larger saving) and possibly the Spot one.

- **Working hours.** A machine without a `costguard:schedule` whose working hours keep to a window
  (core/working_hours.py: the rule the idle warning's offer uses too) and that sat idle 10 hours or
  more outside it: the tag that says so, so that it is started before its hours and never warned in them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from math import ceil
from operator import itemgetter
from typing import NamedTuple

from costguard.core.records import vcpus_of_type
from costguard.core.settings import IdlePolicy
from costguard.core.working_hours import working_hours
from costguard.digest.weekly.rules.figures import InstanceWeek, judge_of
from costguard.digest.weekly.rules.grid import Hour, HourGrid

MIN_HOURS = 24
MIN_DAYS = 5
LOW_GPU_PERCENT = 20.0
SPOT_RUN_HOURS = (2, 6)  # the runs of work Spot is advised for: a run Spot takes back is redone, at most 6 h
SCHEDULE_IDLE_HOURS = 10
ONE_HOUR = timedelta(hours=1)
_at = itemgetter(0)  # an Hour's time: its hours sorted in C, not by a Python call each

# type -> (GPUs, the GPU, its memory in GB). The accelerated sizes costguard can suggest.
_SIZES_1_4_8 = {
    "xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8
}  # fmt: skip
GPU_TYPES: dict[str, tuple[int, str, int]] = {
    **{f"g4dn.{size}": (n, "T4", 16) for size, n in _SIZES_1_4_8.items() if size not in ("24xlarge", "48xlarge")},
    **{f"g5.{size}": (n, "A10G", 24) for size, n in _SIZES_1_4_8.items()},
    **{f"g6.{size}": (n, "L4", 24) for size, n in _SIZES_1_4_8.items()},
    **{f"g6e.{size}": (n, "L40S", 48) for size, n in _SIZES_1_4_8.items()},
    "p3.2xlarge": (1, "V100", 16),
    "p3.8xlarge": (4, "V100", 16),
    "p3.16xlarge": (8, "V100", 16),
    "p4d.24xlarge": (8, "A100", 40),
    "p4de.24xlarge": (8, "A100", 80),
    "p5.4xlarge": (1, "H100", 80),
    "p5.48xlarge": (8, "H100", 80),
}

Price = Callable[[str, str], float | None]  # (instance type, region) -> on-demand USD an hour


@dataclass(frozen=True)
class Advice:
    instance: InstanceWeek
    kind: str  # "fewer-gpus", "cheaper-gpu", "spot" or "schedule"
    suggested: str  # the instance type suggested ("" for Spot: the same type; the tag's value for a schedule)
    now_usd: float  # an hour, as it runs
    then_usd: float  # an hour, as suggested
    hours: float  # the hours the saving is counted over (this week's running, or working stretch, hours)
    basis: str  # the figures it rests on, said plainly

    @property
    def saving_usd(self) -> float:
        """What the week would have cost less."""
        return (self.now_usd - self.then_usd) * self.hours


def supported(hours: Sequence[Hour]) -> bool:
    """A week of data: enough hours with every GPU reporting, spread over most of the week's days."""
    complete = [h for h in hours if h.gpus_busy is not None]
    return len(complete) >= MIN_HOURS and len({h.at.date() for h in complete}) >= MIN_DAYS


class Observed(NamedTuple):
    """A machine a week of data supports, and its running hours of the week."""

    instance: InstanceWeek
    hours: list[Hour]


def observe(instances: Iterable[InstanceWeek], start: datetime, end: datetime) -> Iterator[Observed]:
    """The machines every suggestion may rest on, each with its week's hours read out of its grid once,
    one machine at a time: the kinds of advice share them (`weigh`), and no more than one machine's
    week of Hour objects is held (at 10,000 machines, all of them at once were hundreds of MB)."""
    for instance in instances:
        if (seen := observe_one(instance, start, end)) is not None:
            yield seen


def observe_one(instance: InstanceWeek, start: datetime, end: datetime) -> Observed | None:
    """One machine as `observe` gives it: its running hours in [start, end), if a week of data supports it."""
    if not instance.telemetry:
        return None
    if isinstance(instance.hours, HourGrid):
        hours = instance.hours.between(start, end)
    else:
        hours = [h for h in instance.hours if start <= h.at < end and h.running]
    return Observed(instance, hours) if supported(hours) else None


class Weighed(NamedTuple):
    sizes: list[Advice]  # fewer GPUs or a cheaper GPU, the largest savings first
    spot: list[tuple[InstanceWeek, int, int]]  # the Spot candidates: their prices are read next
    schedules: list[Advice]  # working hours, the largest savings first


def weigh(observed: Iterable[Observed], policy: IdlePolicy, price: Price, *, exclude: Container[str]) -> Weighed:
    """Every kind of advice for each machine in turn, as `advise`, `spot_candidates` and `schedule_advice`
    give them for all the machines at once (the same suggestions, in the same order)."""
    weighing = Weighing(policy, price, exclude)
    for seen in observed:
        weighing.add(seen)
    return weighing.weighed()


class Weighing:
    """`weigh`, a machine at a time: each machine's advice taken as its hours are read, so that the digest
    lets them go (a fleet's week of hours held for the advice was most of the digest's memory)."""

    def __init__(self, policy: IdlePolicy, price: Price, exclude: Container[str]) -> None:
        self.policy, self.price, self.exclude = policy, price, exclude
        self.sizes: list[Advice] = []
        self.spot: list[tuple[InstanceWeek, int, int]] = []
        self.schedules: list[Advice] = []

    def add(self, seen: Observed) -> None:
        self.sizes += advise((seen,), self.policy, self.price)
        self.spot += spot_candidates((seen,), self.policy)
        self.schedules += schedule_advice((seen,), self.policy, exclude=self.exclude)

    def weighed(self) -> Weighed:
        sizes = sorted(self.sizes, key=lambda a: -a.saving_usd)
        return Weighed(sizes, self.spot, sorted(self.schedules, key=lambda a: -a.saving_usd))


def advise(observed: Iterable[Observed], policy: IdlePolicy, price: Price) -> list[Advice]:
    """Size suggestions for every machine a week of data supports; the largest savings first."""
    out: list[Advice] = []
    for instance, hours in observed:
        if instance.instance_type not in GPU_TYPES:
            continue
        now = price(instance.instance_type, instance.region)
        if not now:
            continue
        sizes = (_fewer_gpus(instance, hours, now, price, policy), _cheaper_gpu(instance, hours, now, price, policy))
        options = [a for a in sizes if a is not None]
        if options:
            out.append(max(options, key=lambda a: a.saving_usd))
    return sorted(out, key=lambda a: -a.saving_usd)


def spot_candidates(observed: Iterable[Observed], policy: IdlePolicy) -> list[tuple[InstanceWeek, int, int]]:
    """On-demand machines a week of data supports whose work came in runs Spot suits: (machine, hours in runs
    of SPOT_RUN_HOURS, the longest of them). None that worked a longer run without a break: costguard cannot
    see whether its job saves checkpoints, and a run of days that does not would lose days to one interruption."""
    shortest, longest = SPOT_RUN_HOURS
    out = []
    for instance, hours in observed:
        if instance.lifecycle or not instance.zone:
            continue
        stretches = _working_stretches(hours, instance, policy)
        if not stretches or max(stretches) > longest:
            continue
        runs = [s for s in stretches if s >= shortest]
        if runs:
            out.append((instance, sum(runs), max(runs)))
    return out


def spot_advice(
    candidates: Iterable[tuple[InstanceWeek, int, int]], now: Price, spot: Mapping[tuple[str, str], float]
) -> list[Advice]:
    """Spot suggestions where the Spot price of the type in the machine's zone is below on-demand."""
    out = []
    for instance, hours, longest in candidates:
        on_demand = now(instance.instance_type, instance.region)
        price = spot.get((instance.instance_type, instance.zone))
        if not on_demand or price is None or price >= on_demand:
            continue
        basis = (
            f"{hours} h of work in runs of {SPOT_RUN_HOURS[0]} to {SPOT_RUN_HOURS[1]} h this week, none longer "
            f"(the longest {longest} h: what an interruption could cost), on demand at ${on_demand:.2f}/h; "
            f"Spot in {instance.zone} now ${price:.2f}/h"
        )
        out.append(Advice(instance, "spot", "", on_demand, price, float(hours), basis))
    return sorted(out, key=lambda a: -a.saving_usd)


def schedule_advice(
    observed: Iterable[Observed], policy: IdlePolicy, *, exclude: Container[str] = frozenset()
) -> list[Advice]:
    """Working-hours tags for machines that keep regular hours and sit idle outside them (UTC); none for
    the machines in `exclude` (those that have working hours already, Auto Scaling members)."""
    out = []
    for instance, hours in observed:
        if instance.instance_id in exclude or not instance.usd_per_hour:
            continue
        idle = judge_of(instance, policy)
        working = [h for h in hours if h.gpu_max is not None and not idle(h.cpu_max, h.gpu_max, h.core_max)]
        found = working_hours(h.at for h in working)
        if found is None:
            continue
        idle_outside = [h for h in hours if not found.holds(h.at) and idle(h.cpu_max, h.gpu_max, h.core_max)]
        if len(idle_outside) < SCHEDULE_IDLE_HOURS:
            continue
        tag, window = found.tag, f"{found.opens:02d}:00-{found.closes:02d}:00 UTC"
        basis = (
            f"worked within {window} on {found.days} days "
            f"({found.inside} of its {found.worked} working hours), and sat idle {len(idle_outside)} h outside them"
        )
        out.append(Advice(instance, "schedule", tag, instance.usd_per_hour, 0.0, float(len(idle_outside)), basis))
    return sorted(out, key=lambda a: -a.saving_usd)


def _fewer_gpus(
    instance: InstanceWeek, hours: Sequence[Hour], now: float, price: Price, policy: IdlePolicy
) -> Advice | None:
    gpus = GPU_TYPES[instance.instance_type][0]
    if instance.gpus != gpus:
        return None  # a GPU that never reported is missing data, never a GPU it does not use
    complete = [h for h in hours if h.gpus_busy is not None]
    used = max(h.gpus_busy or 0 for h in complete)
    if gpus < 2 or used >= gpus:
        return None
    need_gpus = max(1, used)
    need_vcpus = _vcpus_needed(instance, hours)
    family = instance.instance_type.partition(".")[0]
    fits = [
        (p, t)
        for t, (n, _, _) in GPU_TYPES.items()
        if t.partition(".")[0] == family and need_gpus <= n < gpus and vcpus_of_type(t) >= need_vcpus
        and (p := price(t, instance.region))
    ]  # fmt: skip
    if not fits:
        return None
    then, suggested = min(fits)
    if then >= now:
        return None
    basis = (
        f"at most {used} of its {gpus} GPUs in use in any of its {len(complete)} hours this week "
        f"(a GPU in use reaches {policy.gpu_idle_percent:.0f}% in the hour); its busiest hour kept {need_vcpus} "
        "vCPUs busy"
    )
    return Advice(instance, "fewer-gpus", suggested, now, then, float(len(hours)), basis)


def _cheaper_gpu(
    instance: InstanceWeek, hours: Sequence[Hour], now: float, price: Price, policy: IdlePolicy
) -> Advice | None:
    gpus, gpu, memory = GPU_TYPES[instance.instance_type]
    idle = judge_of(instance, policy)
    working = [h for h in hours if h.gpu_avg is not None and not idle(h.cpu_max, h.gpu_max, h.core_max)]
    if len(working) < MIN_HOURS:
        return None
    average = sum(h.gpu_avg or 0.0 for h in working) / len(working)
    if average >= LOW_GPU_PERCENT:
        return None
    need_vcpus = _vcpus_needed(instance, hours)
    fits = [
        (p, t)
        for t, (n, _, mem) in GPU_TYPES.items()
        if n == gpus and mem >= memory and vcpus_of_type(t) >= need_vcpus and (p := price(t, instance.region))
    ]
    cheaper = [(p, t) for p, t in fits if p < now]
    if not cheaper:
        return None
    then, suggested = min(cheaper)
    basis = (
        f"its {gpus} {gpu} GPU{'s' if gpus != 1 else ''} averaged {average:.0f}% over the {len(working)} hours it "
        f"worked this week; {suggested} has {gpus} {GPU_TYPES[suggested][1]} ({GPU_TYPES[suggested][2]} GB each)"
    )
    return Advice(instance, "cheaper-gpu", suggested, now, then, float(len(hours)), basis)


def _vcpus_needed(instance: InstanceWeek, hours: Sequence[Hour]) -> int:
    """The vCPUs the busiest hour kept busy: CPUUtilization is a percentage of all of the type's vCPUs."""
    peak = max((h.cpu_max or 0.0) for h in hours)
    return max(1, ceil(peak / 100 * vcpus_of_type(instance.instance_type)))


def _working_stretches(hours: Sequence[Hour], instance: InstanceWeek, policy: IdlePolicy) -> list[int]:
    """Lengths of the runs of consecutive working hours (running, every GPU reporting, not idle)."""
    runs: list[int] = []
    length, previous = 0, None
    idle = judge_of(instance, policy)
    for h in sorted(hours, key=_at):
        working = h.gpu_max is not None and not idle(h.cpu_max, h.gpu_max, h.core_max)
        if working and length and previous is not None and h.at - previous == ONE_HOUR:
            length += 1
        else:
            if length:
                runs.append(length)
            length = 1 if working else 0
        previous = h.at
    if length:
        runs.append(length)
    return runs
