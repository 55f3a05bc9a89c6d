"""What holds a week's idle GPU-hours: each five minutes a machine idled and ran, put to the decision the sweep had
made for it then. Pure: the world's truth (its machines' work), which machine ran when, and the sweeps' own
decisions in (`testing.week.log_decisions` writes them, one JSON line each), GPU-hours by cause out.

Nothing here reckons a decision again: the rule named is the last one the decision's trail says changed it, and
its words are the sweep's. The first two hours of every idle stretch are the oracle's own (bench/week.py's
oracle stops after exactly two hours of true idleness), whatever costguard decided in them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from testing.worlds.week import SLOTS_PER_HOUR, Machine

ORACLE_SLOTS = 2 * SLOTS_PER_HOUR  # the oracle's own two hours after work
IN_FORCE = SLOTS_PER_HOUR // 4  # slots a decision stands: until the next sweep's, 15 minutes on
ORACLE = "the oracle's own 2 hours after work"
UNDECIDED = "no decision in force (a sweep missed, or its machine exempt)"
# The care for work costguard cannot see: the rules that exist for it (night work held from its evening, on a
# machine no activity check answers or a box that runs by itself not yet watched a week; a machine that cannot
# answer spared in its owner's morning), and what the check's rules do on a machine it cannot answer for (GPU
# memory held read as a job waiting, the full window with no check to shorten it, no stop without GPU telemetry).
CARE = frozenset({"its own night work", "its owner's morning"})
CARE_WITHOUT_AGENT = frozenset({"machine's check", "certain idleness"})


@dataclass(frozen=True)
class Decided:
    """One decision a sweep made about one machine: when (the week's slot), what, by which rule, why."""

    slot: int
    instance_id: str
    action: str
    rule: str  # the last rule of its trail ("" where it has none)
    reason: str


def read_decisions(lines: Iterable[str], index: Callable[[datetime], int]) -> dict[str, list[Decided]]:
    """The decision log's lines, by machine, in time order (`index`: the world's slot of a sweep's clock)."""
    out: dict[str, list[Decided]] = defaultdict(list)
    for line in lines:
        if not line.strip():
            continue
        raw = json.loads(line)
        at = index(datetime.fromisoformat(raw["at"]))
        out[raw["instance_id"]].append(
            Decided(at, raw["instance_id"], raw["action"], raw.get("rule") or "", raw.get("reason") or "")
        )
    for decided in out.values():
        decided.sort(key=lambda d: d.slot)
    return dict(out)


def cause(decided: Decided, without_agent: bool) -> str:
    """The cause a decision in force gives an idle hour held: whether the machine answers the check, the rule."""
    who = "no agent" if without_agent else "agent"
    return f"{who}: {decided.rule or 'no rule'} ({decided.action})"


def is_care(label: str) -> bool:
    """Whether a cause is the care for work costguard cannot see (see CARE)."""
    if not label.startswith("no agent: "):
        return any(label.startswith(f"agent: {rule} (") for rule in CARE)
    rule = label.removeprefix("no agent: ").rsplit(" (", 1)[0]
    return rule in CARE | CARE_WITHOUT_AGENT


@dataclass(frozen=True)
class Holds:
    """A week's idle GPU-hours, and the ones held (running while idle), by cause."""

    idle: float
    held: dict[str, float]

    @property
    def reclaimed_percent(self) -> float:
        return 100 * (self.idle - sum(self.held.values())) / self.idle if self.idle else 0.0

    @property
    def care(self) -> float:
        return sum(hours for label, hours in self.held.items() if is_care(label))

    @property
    def care_without_agent(self) -> float:
        """The part of the care held on machines no activity check answers for."""
        return sum(hours for label, hours in self.held.items() if is_care(label) and label.startswith("no agent: "))

    def bound_percent(self) -> float:
        """What the week would reclaim if costguard held nothing but the oracle's own two hours and its care for
        work it cannot see, counted again on this week's decisions (a re-count, not a week run again: without a
        rule, later decisions would differ)."""
        kept = self.held.get(ORACLE, 0.0) + self.care
        return 100 * (self.idle - kept) / self.idle if self.idle else 0.0


def attribute(
    machines: Sequence[Machine],
    running: Mapping[str, Sequence[bool]],
    decisions: Mapping[str, Sequence[Decided]],
    without_agent: Iterable[str],
    first: int,
    last: int,
) -> Holds:
    """Each idle five minutes from `first` to `last` (slots) a machine ran, put to a cause: the oracle's two hours
    after work, else the decision in force (made less than IN_FORCE slots before), else none in force."""
    blind = set(without_agent)
    held: dict[str, float] = defaultdict(float)
    idle = 0.0
    for machine in machines:
        iid, hours = machine.instance_id, machine.gpus / SLOTS_PER_HOUR
        made = decisions.get(iid, ())
        last_work, k = -1, -1
        for i in range(last):
            if machine.slots[i].work:
                last_work = i
                continue
            while k + 1 < len(made) and made[k + 1].slot <= i:
                k += 1
            if i < first:
                continue
            idle += hours
            if not running[iid][i]:
                continue
            if i - last_work <= ORACLE_SLOTS:
                held[ORACLE] += hours
            elif k >= 0 and i - made[k].slot < IN_FORCE:
                held[cause(made[k], iid in blind)] += hours
            else:
                held[UNDECIDED] += hours
    return Holds(idle, dict(held))
