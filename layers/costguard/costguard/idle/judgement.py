"""Utilization series and the judgement of whether they show an idle machine. Pure: no I/O.

The rule above all: missing or insufficient data is never idleness. A signal is idle only when every
period of the window has a datapoint and every datapoint is below the threshold; a single busy
point anywhere makes it busy; a gap makes it insufficient. An instance is idle only when every
signal is idle: every GPU, the CPU, and the network when it is a signal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

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

    def idle_minutes(self, now: datetime) -> int:
        return int((now - self.idle_since).total_seconds() // 60) if self.idle_since else 0


def threshold_for(signal: Signal, policy: IdlePolicy) -> float:
    if signal is Signal.GPU:
        return policy.gpu_idle_percent
    if signal is Signal.CPU:
        return policy.cpu_idle_percent
    return policy.network_idle_bytes_per_second


def judge_series(
    series: Series, threshold: float, start: datetime, end: datetime, policy: IdlePolicy
) -> SignalJudgement:
    """One series over [start, end): busy if any point >= threshold, insufficient if a period has no point."""
    inside = [(t, v) for t, v in series.points if start <= t < end]
    for t, v in inside:
        if v >= threshold:
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
    peak = max(v for _, v in inside)
    return SignalJudgement(series.label, Verdict.IDLE, f"{series.label} peaked at {_fmt(series.signal, peak)}", peak)


def judge(utilization: Utilization, policy: IdlePolicy, now: datetime, *, since: datetime | None = None) -> Judgement:
    """Judge an instance over the idle window ending now (or from `since`, if that is earlier)."""
    start = now - timedelta(minutes=policy.window_minutes)
    if since is not None and since < start:
        start = since
    if utilization.error:
        return Judgement(Verdict.INSUFFICIENT, f"metrics could not be read: {utilization.error}", judged_from=start)
    wanted = [Signal.GPU, Signal.CPU]
    if policy.network_idle_bytes_per_second > 0:
        wanted += [Signal.NETWORK_IN, Signal.NETWORK_OUT]
    judgements: list[SignalJudgement] = []
    for signal in wanted:
        series = utilization.of(signal)
        if not series and signal is not Signal.GPU:
            judgements.append(SignalJudgement(signal.value, Verdict.INSUFFICIENT, f"no {signal.value} data"))
        for one in series:
            judgements.append(judge_series(one, threshold_for(signal, policy), start, now, policy))
    if utilization.gpu_telemetry and not utilization.of(Signal.GPU):
        judgements.append(SignalJudgement("gpu", Verdict.INSUFFICIENT, "GPU series found but no data returned"))

    busy = [j for j in judgements if j.verdict is Verdict.BUSY]
    short = [j for j in judgements if j.verdict is Verdict.INSUFFICIENT]
    gpu_peak = _peak(judgements, utilization.of(Signal.GPU))
    cpu_peak = _peak(judgements, utilization.of(Signal.CPU))
    if busy:
        return Judgement(Verdict.BUSY, busy[0].reason, tuple(judgements), None, gpu_peak, cpu_peak, start)
    if short:
        return Judgement(Verdict.INSUFFICIENT, short[0].reason, tuple(judgements), None, gpu_peak, cpu_peak, start)
    minutes = int((now - start).total_seconds() // 60)
    parts = (
        [f"GPU max {gpu_peak:.1f}% < {policy.gpu_idle_percent:g}%"] if gpu_peak is not None else ["no GPU telemetry"]
    )
    parts.append(f"CPU max {cpu_peak:.1f}% < {policy.cpu_idle_percent:g}%" if cpu_peak is not None else "")
    reason = f"idle for {minutes} min: " + ", ".join(p for p in parts if p)
    since_idle = idle_since(utilization, policy, start)
    return Judgement(Verdict.IDLE, reason, tuple(judgements), since_idle, gpu_peak, cpu_peak, start)


def idle_since(utilization: Utilization, policy: IdlePolicy, window_start: datetime) -> datetime:
    """Start of the trailing run below every threshold, looking back before the window where data allows."""
    since = datetime.min.replace(tzinfo=window_start.tzinfo)
    period = timedelta(seconds=policy.period_seconds)
    for series in utilization.series:
        threshold = threshold_for(series.signal, policy)
        if series.signal in (Signal.NETWORK_IN, Signal.NETWORK_OUT) and threshold <= 0:
            continue
        busy = [t for t, v in series.points if v >= threshold]
        first = series.points[0][0] if series.points else window_start
        since = max(since, busy[-1] + period if busy else first)
    return min(since, window_start)


def _peak(judgements: Sequence[SignalJudgement], series: Sequence[Series]) -> float | None:
    labels = {s.label for s in series}
    peaks = [j.peak for j in judgements if j.label in labels and j.peak is not None]
    return max(peaks) if peaks else None


def _fmt(signal: Signal, value: float) -> str:
    if signal in (Signal.GPU, Signal.CPU):
        return f"{value:.1f}%"
    return f"{value / 1024:.0f} KiB/s"
