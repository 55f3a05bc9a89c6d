"""Utilization series and the judgement of whether they show an idle machine. Pure: no I/O.

The rule above all: missing or insufficient data is never idleness. A signal is idle only when every
period of the window has a datapoint and no datapoint is work; a single busy point anywhere makes it
busy; a gap makes it insufficient. An instance is idle only when every signal is idle. Which signals
count, at which level, and what is work: core/idleness.py, the one rule the weekly digest judges its
hours by too. A machine that published GPU metrics in the last 14 days and sends none now is
insufficient data: a silent agent is not an idle GPU.

CPU points the activity check attributed to the system's own services (apt, snapd, the agents:
idle/rules/evidence.py) are not work: they are data, and idle. GPU points are never excused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from costguard.core.idleness import GPU_MEMORY_HELD_MB, is_work, levels, memory_held, signals
from costguard.core.series import Series, Signal, Utilization
from costguard.core.settings import IdlePolicy


class Verdict(StrEnum):
    IDLE = "idle"
    BUSY = "busy"
    INSUFFICIENT = "insufficient-data"


@dataclass(frozen=True)
class SignalJudgement:
    label: str
    verdict: Verdict
    reason: str
    peak: float | None = None


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str
    signals: tuple[SignalJudgement, ...] = ()
    idle_since: datetime | None = None
    gpu_peak: float | None = None
    cpu_peak: float | None = None
    judged_from: datetime | None = None  # start of the period the data covered
    # A GPU's memory held in the period (the agent's memory_used, where published), as said; "" for none. Not a
    # verdict: the activity check says whose it is; without it, it is work (idle/rules/activity.py).
    memory_held: str = ""

    def idle_minutes(self, now: datetime) -> int:
        return int((now - self.idle_since).total_seconds() // 60) if self.idle_since else 0


def thresholds(utilization: Utilization, policy: IdlePolicy) -> dict[Signal, float]:
    """The level at which each signal is work, for this machine (core/idleness.py)."""
    level = levels(policy, vcpus=utilization.vcpus, busiest_core_known=_busiest_core_known(utilization))
    return level.by_signal()


def _busiest_core_known(utilization: Utilization) -> bool:
    return any(s.points for s in utilization.of(Signal.BUSIEST_CORE))


def per_gpu(series: Sequence[Series]) -> list[Series]:
    """One series per GPU: an agent upgrade or a restart can list one GPU under two dimension sets (for
    14 days); the GPU is judged on all its points together, and missing only if none has any."""
    merged: dict[str, list[tuple[datetime, float]]] = {}
    for one in series:
        merged.setdefault(one.label, []).extend(one.points)
    return [Series(Signal.GPU, label, tuple(sorted(points))) for label, points in merged.items()]


Excused = Callable[[datetime], bool]  # a CPU point the system's own services made


def _never(_: datetime) -> bool:
    return False


def judge_series(
    series: Series,
    threshold: float,
    start: datetime,
    end: datetime,
    policy: IdlePolicy,
    *,
    excused: Excused = _never,
) -> SignalJudgement:
    """One series over [start, end): busy if any point >= threshold (but an excused one), insufficient if
    a period has no point."""
    inside = [(t, v) for t, v in series.points if start <= t < end]
    for t, v in inside:
        if is_work(v, threshold) and not excused(t):
            return SignalJudgement(
                series.label, Verdict.BUSY, f"{series.label} at {_fmt(series.signal, v)} at {t:%H:%M} UTC", v
            )
    period = timedelta(seconds=policy.period_seconds)
    covered_until = end - timedelta(minutes=policy.allowed_lag_minutes)
    missing: list[datetime] = []
    bucket = start
    while bucket + period <= covered_until:
        if not any(bucket <= t < bucket + period for t, _ in inside):
            missing.append(bucket)
        bucket += period
    expected = max(1, int((covered_until - start) / period))
    if missing or not inside:
        first = missing[0] if missing else start
        return SignalJudgement(
            series.label,
            Verdict.INSUFFICIENT,
            f"{series.label}: no data for {len(missing) or expected} of {expected} periods (from {first:%H:%M} UTC)",
        )
    counted = [v for t, v in inside if not excused(t)]
    peak = max(counted, default=0.0)
    reason = f"{series.label} peaked at {_fmt(series.signal, peak)}"
    if len(counted) < len(inside):
        reason += f" (not counting {len(inside) - len(counted)} points of the system's own services)"
    return SignalJudgement(series.label, Verdict.IDLE, reason, peak)


def judge(
    utilization: Utilization,
    policy: IdlePolicy,
    now: datetime,
    *,
    since: datetime | None = None,
    excused: Excused = _never,
    window_minutes: int | None = None,
) -> Judgement:
    """Judge an instance over the idle window ending now (or from `since`, if that is earlier); another
    window's length for the shorter wait of certain idleness. `excused`: CPU points that were not work."""
    start = now - timedelta(minutes=window_minutes or policy.window_minutes)
    if since is not None and since < start:
        start = since
    if utilization.error:
        return Judgement(Verdict.INSUFFICIENT, f"metrics could not be read: {utilization.error}", judged_from=start)
    levels = thresholds(utilization, policy)
    judgements = _judge_signals(utilization, policy, levels, start, now, excused=excused)
    busy = [j for j in judgements if j.verdict is Verdict.BUSY]
    short = [j for j in judgements if j.verdict is Verdict.INSUFFICIENT]
    gpu_peak = _peak(judgements, utilization.of(Signal.GPU))
    cpu_peak = _peak(judgements, utilization.of(Signal.CPU))
    core_peak = _peak(judgements, utilization.of(Signal.BUSIEST_CORE))
    held = _memory_held(utilization, start, now)
    if busy:
        return Judgement(Verdict.BUSY, busy[0].reason, tuple(judgements), None, gpu_peak, cpu_peak, start, held)
    if short:
        return Judgement(
            Verdict.INSUFFICIENT, short[0].reason, tuple(judgements), None, gpu_peak, cpu_peak, start, held
        )
    minutes = int((now - start).total_seconds() // 60)
    parts = (
        [f"GPU max {gpu_peak:.1f}% < {policy.gpu_idle_percent:g}%"] if gpu_peak is not None else ["no GPU telemetry"]
    )
    if core_peak is not None:
        parts.append(f"busiest core max {core_peak:.1f}% < {policy.busiest_core_percent:g}%")
    if cpu_peak is not None:
        parts.append(f"CPU max {cpu_peak:.1f}% < {levels[Signal.CPU]:.3g}%")
    reason = f"idle for {minutes} min: " + ", ".join(p for p in parts if p)
    if any("not counting" in j.reason for j in judgements):
        reason += " (not counting the system's own services' CPU)"
    since_idle = idle_since(utilization, policy, start, excused=excused)
    return Judgement(Verdict.IDLE, reason, tuple(judgements), since_idle, gpu_peak, cpu_peak, start, held)


def _memory_held(utilization: Utilization, start: datetime, end: datetime) -> str:
    """The GPU memory held last in [start, end), as said ("": none, or not published)."""
    found = [
        (point, s.label) for s in utilization.of(Signal.GPU_MEMORY) if (point := memory_held(s.points, start, end))
    ]
    if not found:
        return ""
    (at, mb), label = max(found)
    return f"{label.removesuffix(' memory')} held {mb / 1024:.1f} GB of memory at {at:%H:%M} UTC"


def _judge_signals(
    utilization: Utilization,
    policy: IdlePolicy,
    levels: dict[Signal, float],
    start: datetime,
    now: datetime,
    *,
    excused: Excused = _never,
) -> list[SignalJudgement]:
    judgements: list[SignalJudgement] = []
    for signal in signals(policy, busiest_core_known=_busiest_core_known(utilization)):
        series = per_gpu(utilization.of(signal)) if signal is Signal.GPU else utilization.of(signal)
        if not series and signal is not Signal.GPU:
            judgements.append(SignalJudgement(signal.value, Verdict.INSUFFICIENT, f"no {signal.value} data"))
        cpu = signal in (Signal.CPU, Signal.BUSIEST_CORE)
        for one in series:
            judgement = judge_series(one, levels[signal], start, now, policy, excused=excused if cpu else _never)
            if signal is Signal.GPU and judgement.verdict is Verdict.INSUFFICIENT:
                reason = f"{judgement.reason}; its GPU agent may be silent"
                judgement = SignalJudgement(judgement.label, judgement.verdict, reason)
            judgements.append(judgement)
    if utilization.gpu_telemetry and not utilization.of(Signal.GPU):
        judgements.append(SignalJudgement("gpu", Verdict.INSUFFICIENT, "GPU series found but no data returned"))
    return judgements


def idle_since(
    utilization: Utilization, policy: IdlePolicy, window_start: datetime, *, excused: Excused = _never
) -> datetime:
    """Start of the trailing run below every threshold, looking back before the window where data allows."""
    since = datetime.min.replace(tzinfo=window_start.tzinfo)
    period = timedelta(seconds=policy.period_seconds)
    levels = thresholds(utilization, policy)
    for series in utilization.series:
        if series.signal is Signal.GPU_MEMORY:
            continue  # not a verdict's signal: the check, or its absence, says what memory held means
        if not series.points and series.signal in (Signal.BUSIEST_CORE, Signal.GPU):
            continue  # not published (the judgement already said so where that matters)
        threshold = levels[series.signal]
        if series.signal in (Signal.NETWORK_IN, Signal.NETWORK_OUT) and threshold <= 0:
            continue
        cpu = series.signal in (Signal.CPU, Signal.BUSIEST_CORE)
        busy = [t for t, v in series.points if is_work(v, threshold) and not (cpu and excused(t))]
        first = series.points[0][0] if series.points else window_start
        since = max(since, busy[-1] + period if busy else first)
    return min(since, window_start)


def quiet_gpus(utilization: Utilization, policy: IdlePolicy, start: datetime) -> bool:
    """Every GPU below its threshold at every point since `start` (some point there), or no GPU metrics at
    all on a machine that never had them: a machine worth asking what it is doing."""
    series = utilization.of(Signal.GPU)
    if not series:
        return not utilization.gpu_telemetry and not utilization.error
    points = [v for one in series for t, v in one.points if t >= start]
    return bool(points) and not is_work(max(points), policy.gpu_idle_percent)


def quiet_cpu(utilization: Utilization, policy: IdlePolicy, last: int = 2) -> bool:
    """The CPU's latest points (the busiest core's where published) below their thresholds: not at work now."""
    levels = thresholds(utilization, policy)
    signal = Signal.BUSIEST_CORE if _busiest_core_known(utilization) else Signal.CPU
    points = [p for s in utilization.of(signal) for p in s.points[-last:]]
    return bool(points) and not any(is_work(v, levels[signal]) for _, v in points)


def _peak(judgements: Sequence[SignalJudgement], series: Sequence[Series]) -> float | None:
    labels = {s.label for s in series}
    peaks = [j.peak for j in judgements if j.label in labels and j.peak is not None]
    return max(peaks) if peaks else None


def _fmt(signal: Signal, value: float) -> str:
    if signal in (Signal.GPU, Signal.CPU, Signal.BUSIEST_CORE):
        return f"{value:.1f}%"
    return f"{value / 1024:.0f} KiB/s"


# A machine no activity check answers for (no SSM agent, or not asked yet) has no cgroup accounting to tell the
# system's own timers (apt, snapd, unattended-upgrades, an agent's update: one core for 5 to 15 minutes, a few times
# a day) from work: each would start its idle window again, two hours more of an idle GPU machine for a burst that
# did nothing. Such a burst is taken for the system's where everything else shows a machine at rest, and all of it
# is seen: at most BURST_PERIODS long, and over; one core's worth of CPU at most (the CPU average within
# SYSTEM_CORES cores' share); the CPU seen quiet in every period of QUIET_BEFORE before it and of QUIET_AFTER after
# it; every GPU's utilization and memory published in every period from the one before the burst to the end of
# QUIET_AFTER, each GPU below its level and holding no memory (missing data is never idleness: without GPU memory
# published, a job that loads and then waits would look the same, and nothing is taken); and over before `before`
# (a live warning's time: what comes after a warning is judged as it is).
BURST_PERIODS = 3  # 15 minutes of 5-minute periods
QUIET_BEFORE = timedelta(hours=1)
QUIET_AFTER = 2  # periods
SYSTEM_CORES = 1.5


def system_bursts(utilization: Utilization, policy: IdlePolicy, before: datetime | None = None) -> frozenset[datetime]:
    """The CPU points of short bursts taken for the system's own timers on a machine no check answers for."""
    gpus = per_gpu(utilization.of(Signal.GPU))
    merged: dict[str, list[tuple[datetime, float]]] = {}  # each GPU's memory, under its GPU's label
    for one in utilization.of(Signal.GPU_MEMORY):
        merged.setdefault(one.label.removesuffix(" memory"), []).extend(one.points)
    cpu = [s for s in (*utilization.of(Signal.CPU), *utilization.of(Signal.BUSIEST_CORE)) if s.points]
    if not gpus or any(not merged.get(g.label) for g in gpus) or not utilization.of(Signal.CPU):
        return frozenset()  # a GPU whose memory is not published: not known at rest
    if utilization.vcpus <= 0:
        return frozenset()
    levels = thresholds(utilization, policy)
    period = timedelta(seconds=policy.period_seconds)
    busy = sorted({t for s in cpu for t, v in s.points if is_work(v, levels[s.signal])})
    quiet_cpu = [{t for t, v in s.points if not is_work(v, levels[s.signal])} for s in cpu]
    one_core = {
        t for s in utilization.of(Signal.CPU) for t, v in s.points if v <= SYSTEM_CORES * 100 / utilization.vcpus
    }
    at_rest = [{t for t, v in s.points if not is_work(v, levels[Signal.GPU])} for s in gpus]
    at_rest += [{t for t, v in points if not is_work(v, GPU_MEMORY_HELD_MB)} for points in merged.values()]
    runs: list[list[datetime]] = []
    for t in busy:
        if runs and t - runs[-1][-1] <= period:
            runs[-1].append(t)
        else:
            runs.append([t])
    out: set[datetime] = set()
    for run in runs:
        first, last = run[0], run[-1]
        after = [last + period * k for k in range(1, QUIET_AFTER + 1)]
        hour = [first - period * k for k in range(1, int(QUIET_BEFORE / period) + 1)]
        if len(run) > BURST_PERIODS or (before is not None and after[-1] + period > before):
            continue
        if not all(t in quiet for t in (*hour, *after) for quiet in quiet_cpu):
            continue  # the CPU at work (or not seen) in the hour before it or just after it: not a burst that is over
        if not all(t in one_core for t in run):
            continue  # more than one core's worth: work, not a timer
        if not all(t in rest for t in (first - period, *run, *after) for rest in at_rest):
            continue
        out.update(run)
    return frozenset(out)
