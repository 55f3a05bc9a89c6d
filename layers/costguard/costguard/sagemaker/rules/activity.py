"""Whether a SageMaker resource did any work: judged from what can be seen of it. Pure: no I/O.

Missing data is never idleness, here either:
- a notebook instance is idle only when costguard's lifecycle configuration reported every 5-minute period
  of the window, with no kernel busy or active in any, the busiest CPU core and the busiest GPU under their
  thresholds in all; a period without a report (the server could not be read, the instance was restarting,
  nvidia-smi did not answer on an NVIDIA type) is insufficient data;
- an endpoint is a zombie only when none of its variants was invoked in the window and every variant's
  instances published CPU on every day of it (Invocations has no datapoint for a day without requests, so
  its silence alone proves nothing: the CPU series proves the metrics flowed);
- a Studio app reports no kernel activity, and its LastUserActivityTimestamp "is also updated when SageMaker
  AI performs health checks without user activity" and then equals LastHealthCheckTimestamp (DescribeApp's
  API reference): a health check overwrites the user activity before it. Equal timestamps therefore say
  nothing (unseen: warned about, never deleted); a user activity apart from the last health check is work
  when it falls in the window, and only a user activity kept apart, older than the window, with a health
  check since, is "no user activity SageMaker reports" (never "idle kernels": a kernel's run is not seen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from costguard.core.formatting import plural
from costguard.core.sagemaker import Resource, has_nvidia_gpu
from costguard.core.series import Point, Signal
from costguard.core.settings import SageMakerPolicy

PERIOD = timedelta(minutes=5)
LAG = timedelta(minutes=10)  # the newest periods may not be published yet
DAY = timedelta(days=1)
HEALTH_CHECK_NOISE = timedelta(minutes=5)  # an activity this close to a health check is the health check


class Verdict(StrEnum):
    IDLE = "idle"
    BUSY = "busy"
    INSUFFICIENT = "insufficient-data"
    UNSEEN = "unseen"  # the resource runs, and what is read of it cannot tell idle from busy (Studio apps)


@dataclass(frozen=True)
class Activity:
    verdict: Verdict
    reason: str
    judged_from: datetime | None = None  # the start of the period the data covered
    idle_since: datetime | None = None
    last_invoked: datetime | None = None  # endpoints: the newest day with an invocation, when one is known
    gpu_peak: float | None = None

    @property
    def idle(self) -> bool:
        return self.verdict is Verdict.IDLE


def notebook_activity(
    series: Mapping[Signal, Sequence[Point]] | None,
    *,
    start: datetime,
    now: datetime,
    policy: SageMakerPolicy,
    instance_type: str,
    error: str = "",
) -> Activity:
    """A watched notebook instance over [start, now): its kernels, its busiest CPU core and its GPUs, every
    period reported. Work seen anywhere is work; a period without a kernel or a CPU report (or, on an NVIDIA
    type, a GPU report) is missing data, as is a lifecycle configuration that reports no CPU at all."""
    if error:
        return Activity(Verdict.INSUFFICIENT, f"its metrics could not be read: {error}", start)
    found = series or {}
    kernels = [(t, v) for t, v in found.get(Signal.KERNEL_ACTIVITY, ()) if start <= t < now]
    cores = [(t, v) for t, v in found.get(Signal.BUSIEST_CORE, ()) if start <= t < now]
    gpus = [(t, v) for t, v in found.get(Signal.GPU, ()) if start <= t < now]
    busy = [t for t, v in kernels if v > 0]
    if busy:
        return Activity(Verdict.BUSY, f"a Jupyter kernel was at work at {busy[-1]:%H:%M} UTC", start)
    hot = [(t, v) for t, v in gpus if v >= policy.gpu_idle_percent]
    if hot:
        t, v = hot[-1]
        return Activity(Verdict.BUSY, f"a GPU was at {v:.0f}% at {t:%H:%M} UTC", start)
    working = [(t, v) for t, v in cores if v >= policy.busiest_core_percent]
    if working:
        t, v = working[-1]
        return Activity(Verdict.BUSY, f"a CPU core was at {v:.0f}% at {t:%H:%M} UTC", start)
    required = [("kernel", kernels), ("CPU", cores)]
    if has_nvidia_gpu(instance_type):
        required.append(("GPU", gpus))
    for what, points in required:
        missing = _missing_periods(points, start, now - LAG, PERIOD)
        if missing:
            why = {
                "kernel": "the lifecycle configuration did not report",
                "CPU": "the lifecycle configuration did not report, or is older than costguard's CPU report "
                "(restart the notebook instance to load the current one)",
                "GPU": "nvidia-smi answered nothing",
            }[what]
            return Activity(
                Verdict.INSUFFICIENT,
                f"no {what} report for {plural(len(missing), 'five-minute period')} from {missing[0]:%H:%M} UTC: {why} "
                "(missing data is never idleness)",
                start,
            )
    minutes = int((now - start).total_seconds() // 60)
    gpu_peak = max((v for _, v in gpus), default=None)
    core_peak = max(v for _, v in cores)
    gpu = f", GPU max {gpu_peak:.0f}%" if gpu_peak is not None else ", no GPU on this type"
    return Activity(
        Verdict.IDLE,
        f"no Jupyter kernel or terminal active for {minutes} min, busiest CPU core max {core_peak:.0f}%{gpu}",
        start,
        start,
        gpu_peak=gpu_peak,
    )


def endpoint_activity(
    endpoint: Resource,
    series: Mapping[str, Mapping[Signal, Sequence[Point]]],
    *,
    window_start: datetime,
    now: datetime,
    errors: Mapping[str, str] | None = None,
) -> Activity:
    """A real-time endpoint over [window_start, now), a day at a time, every billed variant."""
    variants = [v for v in endpoint.variants if not v.serverless and v.instance_count > 0]
    last_invoked: datetime | None = None
    for variant in variants:
        key = f"{endpoint.name}/{variant.name}"
        if (errors or {}).get(key):
            return Activity(Verdict.INSUFFICIENT, f"its metrics could not be read: {(errors or {})[key]}", window_start)
        invoked = [t for t, v in series.get(key, {}).get(Signal.INVOCATIONS, ()) if v > 0]
        if invoked:
            last_invoked = max(last_invoked or invoked[-1], *invoked)
    # A point stands for the calls of the day that starts at its timestamp; CloudWatch aligns those days on
    # the query's (rounded) start, not on the window: a day that reaches into the window counts as in it.
    if last_invoked is not None and last_invoked + DAY > window_start:
        return Activity(Verdict.BUSY, f"invoked on {last_invoked:%a %d %b}", window_start, last_invoked=last_invoked)
    # Full days only: today's day is not over.
    end = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for variant in variants:
        cpu = [(t, v) for t, v in series.get(f"{endpoint.name}/{variant.name}", {}).get(Signal.CPU, ())]
        missing = _missing_periods(cpu, _day(window_start), end, DAY)
        if missing:
            return Activity(
                Verdict.INSUFFICIENT,
                f"variant {variant.name} published no instance metrics on {plural(len(missing), 'day')} from "
                f"{missing[0]:%a %d %b}: no invocation datapoint is not proof of no invocation without them",
                window_start,
                last_invoked=last_invoked,
            )
    days = (now - window_start).days
    since = f"; last invoked {last_invoked:%a %d %b}" if last_invoked else "; no invocation found in 90 days"
    return Activity(
        Verdict.IDLE,
        # That its instances ran (their metrics flowed) is checked above, not said: a zombie costs by running.
        f"no invocation in {days} days{since}",
        window_start,
        idle_since=last_invoked + DAY if last_invoked else None,
        last_invoked=last_invoked,
    )


def app_activity(app: Resource, *, start: datetime) -> Activity:
    """A Studio app over [start, now): what SageMaker's two timestamps can and cannot say."""
    activity, health = app.last_user_activity, app.last_health_check
    if health is None or health < start:
        seen = f"the last at {health:%a %d %b %H:%M} UTC" if health else "none at all"
        return Activity(
            Verdict.INSUFFICIENT,
            f"SageMaker reports no health check of it since {start:%a %d %b %H:%M} UTC ({seen}): "
            "missing data is never idleness",
            start,
        )
    apart = activity is not None and abs(activity - health) > HEALTH_CHECK_NOISE
    if apart and activity is not None and activity >= start:
        return Activity(Verdict.BUSY, f"SageMaker saw its user at {activity:%a %H:%M} UTC", start)
    if apart and activity is not None:
        return Activity(
            Verdict.IDLE,
            f"no user activity SageMaker reports since {activity:%a %d %b %H:%M} UTC (checked at "
            f"{health:%a %H:%M} UTC); a kernel's own run is not something SageMaker reports",
            start,
            activity,
        )
    return Activity(
        Verdict.UNSEEN,
        f"running since {app.since:%a %d %b %H:%M} UTC on a GPU, and SageMaker reports only its health checks "
        f"(the last at {health:%a %H:%M} UTC), which overwrite any user activity before them: costguard cannot "
        "tell whether anyone works in it",
        start,
    )


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _missing_periods(points: Sequence[Point], start: datetime, end: datetime, period: timedelta) -> list[datetime]:
    """The periods in [start, end) that have no point at all."""
    missing = []
    bucket = start
    while bucket + period <= end:
        if not any(bucket <= t < bucket + period for t, _ in points):
            missing.append(bucket)
        bucket += period
    return missing
