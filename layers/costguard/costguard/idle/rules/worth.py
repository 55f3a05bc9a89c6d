"""A stop is worth what the bill saves over the hours it keeps the machine off. Pure.

At night a Savings Plan may have room for an idle machine: a stop saves nothing *now*, but in the morning the
plan spills again and every hour the machine runs idle is billed on demand. So a warning or a stop is priced over
its off-period, quarter-hour by quarter-hour, on the region's spill profile (what the plans and RIs left billed
on demand at that quarter-hour of the week, learned by the sweeps): the machine's share there is what its own
usage takes off the spill (min of its on-demand price and the spill). The off-period ends when costguard starts
it again for its work (a job, a learned run, its person's day), else when its owner's working hours next open,
and at most LONGEST_OFF on; a machine whose person undid costguard's last stop may be back as soon as they took
then (`undone_after`): they start it when they like, not when their hours open (`over_its_off_period`). A stop is made
for money when that sum exceeds what its restart is expected to cost: a person's cold start (`cold_start_usd`)
times how often a stop is undone (UNDO_RATE). A region with no profile yet is priced on this hour alone
(`money.priced`), and the trail says so.

The profile is learned gross of costguard's own stops: what would have spilled had the machines costguard kept
stopped then been running (`SweepBill.spill_found`). So every stop still in force takes its share first, over the
hours it is expected to stay off (`in_force`), and so does every machine still off that the quarter-hours to come
were learned gross of a week before (`counted_until`); then this sweep's stops in turn (`Taken`). Learned net of
them, the stops of earlier sweeps could not be told apart from those already off the week before; priced on a
spill they had taken, the thirtieth stop of a Saturday believed Monday's whole spill its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.bill import SLOT, Exposure, OffWorth, SpillProfile, slot_of
from costguard.core.money import Basis, Marginal
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.capacity import owners_hours
from costguard.idle.rules.decision import Action, Decision, KeptFor
from costguard.idle.rules.money import NOT_FOR_MONEY, PRICED, priced
from costguard.idle.rules.restarts import cold_start_usd, costguards_stop, undone_stop

# The longest off-period a stop is priced over when nothing says when the machine is wanted again (a Friday
# evening's stop reaches Monday's morning).
LONGEST_OFF = timedelta(hours=72)
# How often a person starts a machine again after costguard stopped it, where nothing more is known of it: a
# stop is worth making when it saves more than this share of a cold start. (A machine whose person undid a stop
# is held apart: restarts.held_after_undo.)
UNDO_RATE = 0.1
WEEK = timedelta(days=7)  # the profile's quarter-hours are the week before's
_HOURS = SLOT / timedelta(hours=1)

# What was taken off a layer's spill at a quarter-hour of the week by stops decided before in the same sweep
Taken = Mapping[tuple[str, int], float]


@dataclass(frozen=True)
class InForce:
    """What costguard's stops of earlier sweeps, their machines still off, take of each layer's spill at each
    quarter-hour they are expected to stay off, and which machines took of each layer."""

    taken: Mapping[tuple[str, int], float] = field(default_factory=dict)
    by: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Priced:
    """A stop priced over its off-period, and what it takes of each layer's spill there."""

    worth: OffWorth
    takes: Mapping[tuple[str, int], float]


def off_until(decision: Decision, instance: Instance, policy: IdlePolicy, now: datetime) -> datetime:
    """When the machine is expected to run again: costguard's start for its next work, else its owner's next
    working hours; never later than LONGEST_OFF, nor sooner than a quarter-hour on."""
    return _until(decision.start_at, instance, policy, now)


def over_its_off_period(  # noqa: PLR0917 (the stop's facts, each its own)
    exposure: Exposure,
    profile: SpillProfile | None,
    now: datetime,
    decision: Decision,
    instance: Instance,
    policy: IdlePolicy,
    taken: Taken | None = None,
    kept: InForce | None = None,
) -> tuple[Priced | None, datetime]:
    """The stop priced over its off-period (`over_off_period` to `off_until`), and where that ends. A machine whose
    person undid costguard's last stop may be back as soon as they took then (`undone_after`): where the stop
    saves nothing until then, it is priced to then, and saves nothing. (A weekend's stops of machines their people
    started again within hours each time saved nothing: priced to Monday's spill, they were undone while the Savings
    Plan still had room.) A stop that saves something before then is priced to its whole off-period, as before."""
    until = off_until(decision, instance, policy, now)
    restart = restart_usd(policy)
    found = over_off_period(exposure, profile, now, until, restart, taken, kept)
    undone = undone_after(instance, policy)
    if found is None or undone is None or now + undone >= until:
        return found, until
    back = max(now + SLOT, now + undone)
    soon = over_off_period(exposure, profile, now, back, restart, taken, kept)
    if soon is not None and not soon.worth.usd:
        return soon, back
    return found, until


def undone_after(instance: Instance, policy: IdlePolicy) -> timedelta | None:
    """How soon its person started this running machine again after costguard's last stop, where they undid it
    (`restarts.undone_stop`: within UNDONE_WITHIN, not its working hours' start); None where they did not."""
    stopped = undone_stop(instance, (), policy)
    return None if stopped is None else instance.launch_time - stopped


def stopped_until(instance: Instance, policy: IdlePolicy, now: datetime) -> datetime:
    """How long a machine costguard keeps stopped takes its share of the profile's spill, from now: until it is
    expected to run again: the start its start-at promises, else its owner's next working hours. One stopped
    longer than LONGEST_OFF ago with no start costguard will make (no start-at, no working hours' schedule), that
    nobody wanted back since, stays off to the horizon, and takes only over the quarter-hours the profile learned
    gross of it (`counted_until`)."""
    start_at = formatting.parse_time(instance.tags.get(tags.START_AT))
    stopped_at = costguards_stop(instance)
    # a start costguard will make (its start-at, even one just due; its working hours' schedule) brings it back
    starts = start_at is not None or tags.SCHEDULE in instance.tags
    if not starts and stopped_at is not None and now - stopped_at > LONGEST_OFF:
        return min(now + LONGEST_OFF, counted_until(stopped_at))
    return _until(start_at, instance, policy, now)


def counted_until(stopped_at: datetime) -> datetime:
    """The last quarter-hour of the week to come whose spill was learned gross of a machine costguard stopped at
    `stopped_at`: the profile's quarter-hour is last week's, and a week ago the sweeps counted a stopped machine
    as running only within LONGEST_OFF of its stop (`reads.bill.lately`). Counted while it was, it must take its
    share again now, however long it has been off: taken only while it was expected back, the machines stopped
    on the first Monday after a deploy, off all week, left that Monday's learned spill to the next Monday's
    stops, and each of them saved nothing."""
    return stopped_at + WEEK + LONGEST_OFF


def _until(start_at: datetime | None, instance: Instance, policy: IdlePolicy, now: datetime) -> datetime:
    if start_at is not None and start_at > now:
        end = start_at
    else:
        end = owners_hours(instance, policy.team_timezone).next_start(now)
    return max(now + SLOT, min(end, now + LONGEST_OFF))


def in_force(stopped: Sequence[tuple[str, Exposure, datetime]], profile: SpillProfile, now: datetime) -> InForce:
    """What the machines costguard keeps stopped take of the profile's spill, each (its id, its exposure as if it
    ran, when it is expected to run again) in turn, from the next quarter-hour to its expected start: their
    hours now are already off the bill. A quarter-hour the profile has not seen is taken by none."""
    taken: dict[tuple[str, int], float] = {}
    by: dict[str, set[str]] = {}
    for instance_id, exposure, until in stopped:
        if not exposure.hourly:
            continue
        moment = now + SLOT
        while moment < until:
            rate, took = _rate(exposure, profile, moment, taken)
            if rate is not None:
                for key, amount in took.items():
                    if amount > 0:
                        taken[key] = taken.get(key, 0.0) + amount
                        by.setdefault(key[0], set()).add(instance_id)
            moment += SLOT
    return InForce(taken, {key: frozenset(ids) for key, ids in by.items()})


def restart_usd(policy: IdlePolicy, undo_rate: float = UNDO_RATE) -> float:
    """What a stop's restart is expected to cost: a person's cold start, times how often a stop is undone."""
    return cold_start_usd(policy) * undo_rate


def over_off_period(  # noqa: PLR0917 (the stop's facts, each its own)
    exposure: Exposure,
    profile: SpillProfile | None,
    now: datetime,
    until: datetime,
    restart: float,
    taken: Taken | None = None,
    kept: InForce | None = None,
) -> Priced | None:
    """What a stop saves from `now` to `until`, quarter-hour by quarter-hour: this quarter-hour at the bill's
    price now (the sweep's other stops taken off in turn), the next ones on the profile, less what the stops
    still in force (`kept`) and the sweep's stops decided before (`taken`) take of it. None where nothing is
    known by hour: no profile yet, a quarter-hour of its off-period the profile has not seen (nor a day of its
    kind: a first week's weekend), a plan judged on its recent use, no price. A guess for an unseen hour made 30
    of a week's 266 stops save nothing over their whole off-period, and people undid 18 more stops."""
    marginal = exposure.marginal
    layers = (*exposure.plan_keys, *((exposure.ri.key,) if exposure.ri else ()))
    by_hour = marginal.prepaid or marginal.basis is Basis.SPOT or not layers or _known(profile, layers)
    if not exposure.hourly or marginal.usd_per_hour is None or profile is None or not by_hour:
        return None
    own = taken or {}
    before = kept.taken if kept is not None else {}
    both = {key: own.get(key, 0.0) + before.get(key, 0.0) for key in {*own, *before}}
    walked = _walk(exposure, profile, now, until, both)
    if walked is None:
        return None
    usd, first, takes = walked
    room, by = 0.0, 0
    if kept is not None and before:
        alone = _walk(exposure, profile, now, until, own)
        room = max(0.0, alone[0] - usd) if alone is not None else 0.0
        by = len(frozenset().union(*(kept.by.get(key, frozenset()) for key in layers)))
    spills_from = first if first is not None and first > now else None
    worth = OffWorth(
        round(usd, 2), until, round(restart, 2), spills_from, _what(exposure), round(room, 2), by if room else 0
    )
    return Priced(worth, takes)


def _walk(
    exposure: Exposure, profile: SpillProfile, now: datetime, until: datetime, taken: Taken
) -> tuple[float, datetime | None, dict[tuple[str, int], float]] | None:
    """The stop's saving over its off-period on what is left of the spill, the first quarter-hour it saves in,
    and what it takes of each layer's spill; None where a quarter-hour's price is unknown."""
    usd, first, takes = 0.0, None, {}
    moment = now
    while moment < until:
        rate: float | None = exposure.marginal.usd_per_hour  # the bill's own price now: `Bill.stopped` takes its share
        took: dict[tuple[str, int], float] = {}
        if moment > now:
            rate, took = _rate(exposure, profile, moment, taken)
        if rate is None:
            return None
        usd += rate * _HOURS
        if rate > 0 and first is None:
            first = moment
        takes.update(took)
        moment += SLOT
    return usd, first, takes


def judged(decision: Decision, marginal: Marginal, found: Priced | None, until: datetime) -> Decision:
    """The decision with what its stop saves over its off-period (to `until`): a warning or a stop whose
    off-period does not save more than its restart costs becomes none (a stop already warned of clears its
    warning). Without a profile, today's rule: priced on this hour (`money.priced`), and said."""
    if decision.action not in PRICED:
        return decision
    if found is None:
        out = priced(decision, marginal)
        unprofiled = OffWorth(None, until)
        if out.action is decision.action:
            return replace(out, worth=unprofiled)
        return replace(out, reason=f"{out.reason}; {unprofiled.text()}", worth=unprofiled)
    worth = found.worth
    if worth.worth_it:
        return replace(decision, bill=marginal, worth=worth)
    action = Action.CLEAR_WARNING if decision.action is Action.STOP else Action.NONE
    off = f"{worth.until:%a %H:%M} UTC"
    room = f"; {worth.room_text()}" if worth.room_text() else ""
    if not worth.usd:
        why = f"{NOT_FOR_MONEY} nor until {off}{room} ({marginal.why})"
    else:
        why = (
            f"not stopped for money: until {off} a stop saves about ${worth.usd:,.2f} on the bill, no more than "
            f"its restart is expected to cost (${worth.restart_usd:,.2f}){room} ({marginal.why})"
        )
    return replace(
        decision,
        action=action,
        reason=why,
        bill=marginal,
        worth=worth,
        will_stop=False,
        stop_after=None,
        kept_for=KeptFor.NOTHING_SAVED,
        scarce="",  # left running for the bill, not for capacity: no daily tell of scarcity
    )


def _known(profile: SpillProfile | None, layers: tuple[str, ...]) -> bool:
    return profile is not None and profile.knows(layers)


def _rate(
    exposure: Exposure, profile: SpillProfile, moment: datetime, taken: Taken
) -> tuple[float | None, dict[tuple[str, int], float]]:
    """What the machine's usage costs the bill at this quarter-hour, and what it takes of each layer there."""
    marginal, slot = exposure.marginal, slot_of(moment)
    if marginal.prepaid:  # paid until the hold ends; a Capacity Block's machine ends with it
        ended = marginal.until is not None and moment >= marginal.until
        return ((marginal.on_demand if ended and marginal.basis is Basis.CAPACITY_RESERVATION else 0.0), {})
    if marginal.basis is Basis.SPOT:
        return marginal.usd_per_hour, {}
    on_demand = marginal.on_demand
    if on_demand is None:
        return None, {}
    took: dict[tuple[str, int], float] = {}
    share = exposure.share_now
    ri = exposure.ri
    if ri is not None:
        seen = profile.at(ri.key, moment)
        if seen is None:  # never seen: not guessed
            return None, {}
        over = seen + sum(n for end, n in ri.ends if end <= moment)
        over = max(0.0, over - taken.get((ri.key, slot), 0.0))
        share = min(ri.mine, over) / ri.mine if ri.mine else 0.0
        took[(ri.key, slot)] = min(ri.mine, over)
    flow = on_demand * share
    if not exposure.plan_keys:
        return flow, took
    spills = []
    for key in exposure.plan_keys:
        seen = profile.at(key, moment)
        if seen is None:  # never seen: not guessed
            return None, {}
        spill = seen + sum(room for k, end, room in exposure.plan_ends if k == key and end <= moment)
        spills.append(max(0.0, spill - taken.get((key, slot), 0.0)))
    saved = min(flow, *spills)
    for key in exposure.plan_keys:
        took[(key, slot)] = saved
    return saved, took


def _what(exposure: Exposure) -> str:
    if exposure.plan_keys:
        return "the Savings Plan"
    if exposure.ri is not None:
        return "the Reserved Instances"
    if exposure.marginal.basis is Basis.CAPACITY_RESERVATION:
        return "the capacity reservation"
    return ""
