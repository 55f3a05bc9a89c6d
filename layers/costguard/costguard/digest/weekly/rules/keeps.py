"""Keeps that outlived their work: a timed keep pressed in Slack on a machine that then sat idle through most of
it. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules.figures import InstanceWeek, is_idle


@dataclass(frozen=True)
class OutlivedKeep:
    """A timed keep pressed in Slack on a machine that then sat idle through most of it."""

    instance_id: str
    kept_by: str
    until: datetime
    kept_hours: float
    idle_hours: float
    waste_usd: float


def outlived_keeps(
    keeps: Iterable[tuple[str, str, datetime, datetime]],
    instances: Iterable[InstanceWeek],
    end: datetime,
    policy: IdlePolicy,
) -> list[OutlivedKeep]:
    """Keeps (instance, who, pressed at, until) idle for at least half of their kept hours and two hours
    or more: the work ended long before the keep did. Worst first."""
    by_id = {i.instance_id: i for i in instances}
    out = []
    for instance_id, who, pressed, until in keeps:
        instance = by_id.get(instance_id)
        if instance is None:
            continue
        kept = [h for h in instance.hours if pressed <= h.at < min(until, end) and h.running]
        idle = sum(1 for h in kept if is_idle(h, instance, policy))
        if kept and idle >= 2 and idle >= len(kept) / 2:
            waste = idle * instance.idle_usd_per_hour
            out.append(OutlivedKeep(instance_id, who, until, float(len(kept)), float(idle), waste))
    return sorted(out, key=lambda k: -k.waste_usd)
