"""Ready before its person arrives. Pure: a machine's last two weeks of quarter-hours and its price in, the time
costguard starts it again for its person's working day out (or none).

A person whose machine costguard stopped overnight starts it again when they come to work on it, and waits: for
the boot, and then for themselves to pick their work up again (a cold start: `restarts.cold_start_usd`, their
minutes priced at `PersonHourUsd`: a data scientist costs more than the machine). A start costguard makes
earlier costs the machine's idle hours until the work comes or, on a day it does not, until the idle rule
stops it again (its window and grace: its hold).

People do not start work at a fixed time (a recurring pattern, idle/rules/recurring.py, wants three days in
half an hour), but many start it within a few hours of the same time on most weekdays. `arrival` looks at the
weekdays of the last two weeks on the team's clock, and at each time of day a start could have been made (the
quarter-hour, the lead before a day's first work). Each day whose first work came within the hold after that time
counts the idle hours before the work, and the person's cold start saved where the machine was up by then (the
lead after the start); each day whose work did not come in that time counts the hold's idle hours, and the stop that
then follows (a person who undoes costguard's stops undoes that one as often: a cold start at that rate); a day
whose work began before that time counts nothing (the machine was at work). The time that paid most is used
where it paid on the balance, on at least MIN_DAYS days. The first work of a day is a busy quarter after the
machine was quiet (idle, or stopped) for the idle window: before it, costguard would have stopped it.

Weekends have no arrival of their own: their work is too rare to learn from ten days. But a weekend day whose
work came at the weekdays' time (a weekday's work on another clock: a New York evening is 01:00 UTC on Saturday)
gets its start too (`Arrival.weekend`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.recurring import QUARTER, Quarter, work_starts
from costguard.idle.rules.restarts import UNDONE_WITHIN, cold_start_usd

LOOKBACK = 10  # weekdays looked at, at most
MIN_DAYS = 3  # weekdays a start at that time would have found its work on
PUT_TO_WORK = "is put to work"  # how a decision's `learned` begins (the start's words)


@dataclass(frozen=True)
class Arrival:
    """When costguard starts a machine for its person's weekday, and what the last weekdays said of it."""

    zone: str  # the team's clock
    minute: int  # after the midnight of the day the work is for, on that clock, when the start is made (-15: the
    # evening before, 23:45, for work that comes at midnight)
    hold: timedelta  # how long a start waits for its work
    found: int  # weekdays whose work came within the hold after that time
    seen: int  # weekdays looked at
    first: int  # the earliest and latest minute of the day the work came, on those days (past 1440: after
    last: int  # midnight)
    net_usd: float  # what starting at that time saved over those weekdays, cold starts less idle hours
    # the weekend days (5: Saturday, 6: Sunday, the team's clock) whose work came within the hold after that time
    # on the last one looked at: a weekday's work on another clock (a New York evening is a Saturday's 01:00 UTC)
    weekend: frozenset[int] = frozenset()

    def _works(self, day: date) -> bool:
        return day.weekday() < 5 or day.weekday() in self.weekend

    def on(self, day: date) -> datetime:
        """The start made for `day`'s work (UTC)."""
        return _at(day, self.minute, ZoneInfo(self.zone)).astimezone(UTC)

    def next_start(self, after: datetime) -> datetime:
        """The next weekday's start strictly after `after` (UTC)."""
        day = after.astimezone(ZoneInfo(self.zone)).date()
        for ahead in range(9):
            current = day + timedelta(days=ahead)
            if self._works(current) and (at := self.on(current)) > after:
                return at
        raise AssertionError("a weekday comes within eight days")

    def holding(self, now: datetime) -> datetime | None:
        """The end of today's wait for the person, if `now` is in it (a weekday's start to its hold's end)."""
        day = now.astimezone(ZoneInfo(self.zone)).date()
        for current in (day - timedelta(days=1), day, day + timedelta(days=1)):
            at = self.on(current)
            if self._works(current) and at <= now < at + self.hold:
                return at + self.hold
        return None

    def describe(self) -> str:
        def clock(minute: int) -> str:
            return f"{minute // 60 % 24:02d}:{minute % 60:02d}"

        return (
            f"{PUT_TO_WORK} between {clock(self.first)} and {clock(self.last)} {self.zone} on {self.found} of the "
            f"last {self.seen} weekdays"
        )


def arrival(
    quarters: Sequence[Quarter],
    now: datetime,
    *,
    usd_per_hour: float,
    policy: IdlePolicy,
    running_at: Iterable[datetime] = (),
    undone: float = 0.0,
) -> Arrival | None:
    """The time of day starting this machine on a weekday pays most, if one pays (see the module's text).
    `undone`: the share of its stops its person undid (`undone_share`): a start whose person did not come ends
    in one more stop, which they undo as often."""
    zone = ZoneInfo(policy.team_timezone)
    hold = timedelta(minutes=policy.window_minutes + policy.grace_minutes)
    lead = timedelta(minutes=policy.schedule_lead_minutes)
    busy = {q.at for q in quarters if q.busy}
    quiet = timedelta(minutes=policy.window_minutes)
    firsts = [
        s.astimezone(zone)
        for s in work_starts(quarters, running_at)
        if not any(s - k * QUARTER in busy for k in range(1, int(quiet / QUARTER) + 1))
    ]
    days = weekdays_looked_at(now, zone)
    if not days or not firsts:
        return None
    cold = cold_start_usd(policy)
    # Each a start's minutes after the midnight of the day of the work it is for (before midnight: negative).
    candidates = sorted(
        {int((_floor_to_quarter(s - lead) - _at(s.date(), 0, zone)) / timedelta(minutes=1)) for s in firsts}
    )
    best: Arrival | None = None
    for minute in candidates:
        net, came = 0.0, list[int]()  # minutes after the start the work came, on the days it saved
        for day in days:
            at = _at(day, minute, zone)
            came_at = next((s for s in firsts if at <= s <= at + hold), None)
            if came_at is None:
                if not any(at - timedelta(hours=12) <= s < at for s in firsts):
                    net -= usd_per_hour * hold / timedelta(hours=1) + undone * cold  # started for nobody
                continue  # (or its person was at work on it already: no start made)
            net -= usd_per_hour * (came_at - at) / timedelta(hours=1)
            if came_at >= at + lead:  # up before its person came: their cold start saved
                net += cold
                came.append(int((came_at - at) / timedelta(minutes=1)))
        if len(came) < MIN_DAYS or net <= 0 or (best is not None and net <= best.net_usd):
            continue
        first, last = minute + min(came), minute + max(came)  # past midnight, the clock shows the next day's
        best = Arrival(policy.team_timezone, minute, hold, len(came), len(days), first, last, round(net, 2))
    if best is None:
        return None
    return replace(best, weekend=_weekend_work(firsts, best.minute, hold, now, zone))


def _weekend_work(
    firsts: Sequence[datetime], minute: int, hold: timedelta, now: datetime, zone: ZoneInfo
) -> frozenset[int]:
    """The weekend days whose work came within the hold after the start's time on the last of them looked at.
    Weekends have no arrival of their own, but a weekday's work on another clock falls on one (a New York
    evening's pipeline is at 01:10 UTC on Saturday): stopped on Saturday at 00:45 until Monday, it was stopped
    into its run."""
    today = now.astimezone(zone).date()
    out = set()
    for weekday in (5, 6):
        day = today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)  # the last one before today
        at = _at(day, minute, zone)
        if any(at <= s <= at + hold for s in firsts):
            out.add(weekday)
    return frozenset(out)


def with_arrival(decision: Decision, found: Arrival | None, policy: IdlePolicy, now: datetime) -> Decision:
    """A warning or a stop in the light of its person's weekday: not while a start made for it waits for them
    (from its time to its hold's end); else, where no learned run already brings it back, with the start
    before the person's next weekday, unless that comes too soon after the stop to pay."""
    if found is None or decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    waiting = found.holding(now)
    if waiting is not None:
        why = f"it {found.describe()}: waits for its person until {waiting:%H:%M} UTC"
        return replace(decision, action=Action.NONE, reason=why)
    if decision.start_at is not None:
        return decision  # its learned run or its job brings it back
    stop_at = decision.stop_time(now)
    start_at = found.next_start(stop_at)
    if start_at - stop_at < timedelta(minutes=policy.shortest_stop_minutes):
        why = f"it {found.describe()}: its person's day, at {start_at:%H:%M} UTC, is too soon after a stop to pay"
        return replace(decision, action=Action.NONE, reason=why)
    return replace(decision, next_work=found.describe(), start_at=start_at, start_for=StartFor.PERSONS_DAY)


def undone_share(changes: Sequence[tuple[datetime, str]], people: Sequence[datetime]) -> float:
    """Of a machine's recorded stops, the share its person undid: started again by them (`people`: the starts
    not costguard's) within UNDONE_WITHIN."""
    ordered = sorted(changes)
    stops = [at for at, state in ordered if state == "stopped"]
    undid = sum(1 for at in stops if any(at < p <= at + UNDONE_WITHIN for p in people))
    return undid / len(stops) if stops else 0.0


def weekdays_looked_at(now: datetime, zone: ZoneInfo) -> list[date]:
    """The last LOOKBACK weekdays before today on the team's clock, within the two weeks looked at."""
    today = now.astimezone(zone).date()
    days = (today - timedelta(days=back) for back in range(1, 14))
    return [day for day in days if day.weekday() < 5][:LOOKBACK]


def _at(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """`minute` minutes after `day`'s midnight on the zone's wall clock (negative: the evening before)."""
    return datetime.combine(day, time(0), tzinfo=zone) + timedelta(minutes=minute)


def _floor_to_quarter(at: datetime) -> datetime:
    return at.replace(minute=at.minute // 15 * 15, second=0, microsecond=0)
