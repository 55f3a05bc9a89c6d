"""What the exempt machines idled this week, and which of them have runs. Pure: the week's hours in, lines out.

`costguard:exempt` is the owner's tool against a lost night: never stopped, forever. The digest says what
that costs (each exempt machine's idle GPU-hours this week, and their dollars at the digest's own price of an
idle hour: on the bill, $0 on paid capacity) and, where the machine's week shows work that starts at the same
hour on at least 3 of its days (as the idle stopper learns recurring work, at the digest's hour resolution),
that "keep it for its runs" would stop it between them instead. The digest sees neither crontabs nor the
learned starts: a machine whose runs only its crontab knows is not told so here (its warning would).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules.figures import InstanceWeek, Week, judge_of

SHOWN = 10  # the lines the digest gives them: the costliest first
MIN_DAYS = 3  # days with work starting at the same hour: a run (the idle stopper's 3 of the last 7)


@dataclass(frozen=True)
class ExemptIdle:
    """An exempt machine that sat idle this week: how long, what it cost, and the runs its week shows."""

    instance_id: str
    instance_type: str
    owner: str
    reason: str  # the exempt tag's value ("" when none was given)
    idle_gpu_hours: float
    idle_usd: float
    runs: str = ""  # "work starts at about 02:00 UTC on 5 days", or "" when its week shows none


def exempt_idle(
    raw: Mapping[str, Instance], weeks: Iterable[InstanceWeek], week: Week, policy: IdlePolicy
) -> list[ExemptIdle]:
    """Every exempt machine that idled this week, the costliest first (then the most idle GPU-hours)."""
    out = []
    for instance in weeks:
        machine = raw.get(instance.instance_id)
        idle = week.idle_hours_by_instance.get(instance.instance_id, 0.0)
        if machine is None or tags.EXEMPT not in machine.tags or idle <= 0:
            continue
        out.append(
            ExemptIdle(
                instance.instance_id,
                instance.instance_type,
                instance.owner,
                machine.tags[tags.EXEMPT],
                idle * instance.gpus,
                idle * instance.idle_usd_per_hour,
                recurring_start(instance, policy),
            )
        )
    return sorted(out, key=lambda e: (-e.idle_usd, -e.idle_gpu_hours, e.instance_id))


def recurring_start(instance: InstanceWeek, policy: IdlePolicy) -> str:
    """The hour of the day (UTC) work starts at on the most days of the week, if on MIN_DAYS or more: a start is
    an hour of work (by the stopper's rule) after an hour without (idle, or not running)."""
    idle = judge_of(instance, policy)
    busy = {h.at for h in instance.hours if not idle(h.cpu_max, h.gpu_max, h.core_max)}
    days: dict[int, set[date]] = {}
    for at in busy:
        if at - timedelta(hours=1) not in busy:
            days.setdefault(at.hour, set()).add(at.date())
    ranked = sorted(days.items(), key=lambda found: (-len(found[1]), found[0]))  # most days, then earliest
    if not ranked or len(ranked[0][1]) < MIN_DAYS:
        return ""
    hour, seen = ranked[0]
    return f"work starts at about {hour:02d}:00 UTC on {len(seen)} days"
