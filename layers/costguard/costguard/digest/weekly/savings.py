"""What costguard's stops saved this week: hours each stopped machine stayed off, at what the bill saved.

A stop's machine is off from the stop until it ran again: the first start known after it (costguard's own,
in its ledger and start log; EC2's state changes the idle stopper received; CloudTrail's StartInstances; the
machine's own launch time, its last start). A stop followed by another with no start known between them ran
again at a time nobody knows: its hours are unknown, never counted as off.

A stop made before the week whose machine was still off when the week began saved money on this week's bill
too: its hours inside the week count, from the week's start until the machine ran again, by the same
reckoning and at the same prices. Such stops are found by reading the ledger `LOOKBACK` (7 days) before the
week: the previous digest's whole week, so that a stop is counted in every week it overlaps as long as it
ends within the week after its own. A stop older than that (a machine left off more than a week before this
one) is not found: its hours this week are left out, and the claim errs low, never high. The weekly digest
counts the hours from where the digest before ended (`claimed_since`: the week kept by that digest says when
it ran; seven days before the run when none is known): an hour off is claimed by one digest, never by two, across
a clock change or a run retried late."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.state.entries import Entry, EntryKind
from costguard.state.worth import Worth

# costguard's own starts, as its ledger keeps them
STARTS = (EntryKind.MORNING_START, EntryKind.LEARNED_START, EntryKind.DAY_START, EntryKind.START_FROM_SLACK)
# how far before the week the digest reads the ledger for the stops still in force at its start (module docstring)
LOOKBACK = timedelta(days=7)
WEEK = timedelta(days=7)  # what a weekly digest claims the saving of when the digest before it is not known
# how far from seven days before a digest the one before it may have ended and still be taken as the one before
# (a clock change: an hour; a run retried late: hours); one further off was run by hand, or weeks ago
NEAR_A_WEEK = timedelta(days=1)


def claimed_since(end: datetime, before: datetime | None) -> datetime:
    """Where the saving of the digest run at `end` starts: where the digest before it ended (`before`), when that
    was about a week ago; else seven days before `end` (the first digest, one missed, or one run by hand)."""
    if before is not None and abs(end - WEEK - before) <= NEAR_A_WEEK:
        return before
    return end - WEEK


class Saved(NamedTuple):
    hours: float
    usd: float  # on the bill
    list_usd: float  # the same hours at the on-demand price, beside it


def stops_of(entries: Sequence[Entry], start: datetime | None = None) -> dict[str, list[Entry]]:
    """Each machine's stops, in order: those of the week (from `start`), and the last one before it, the only
    one that can have kept its machine off into the week (an earlier one ended by the next stop at the latest)."""
    stops: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.kind.stopped and entry.applied:
            stops[entry.instance_id].append(entry)
    for instance_id, made in stops.items():
        made.sort(key=lambda e: e.at)
        if start is not None:
            before = sum(1 for e in made if e.at < start)
            stops[instance_id] = made[max(0, before - 1) :]
    return stops


def starts_in_ledger(entries: Sequence[Entry]) -> dict[str, list[datetime]]:
    """costguard's own starts this week, by machine."""
    out: dict[str, list[datetime]] = defaultdict(list)
    for entry in entries:
        if entry.kind in STARTS and entry.applied:
            out[entry.instance_id].append(entry.at)
    return out


def off_periods(
    made: Sequence[Entry], instance: Instance, end: datetime, started: Sequence[datetime]
) -> list[tuple[Entry, datetime | None]]:
    """Each stop of one machine, and when the machine ran again (None: unknown)."""
    starts = sorted({*started, instance.launch_time})
    out: list[tuple[Entry, datetime | None]] = []
    for entry, after in zip(made, [*made[1:], None], strict=True):
        first = next((t for t in starts if t > entry.at), None)
        if after is not None:  # it ran again before the next stop: when, if anything recorded it
            until = first if first is not None and first <= after.at else None
        elif first is not None:
            until = min(first, end)
        else:  # no start since the stop: off still, or (running, never started since?) unknown
            until = end if instance.state in ("stopped", "stopping") else None
        out.append((entry, until))
    return out


def ends(
    entries: Sequence[Entry],
    raw: Mapping[str, Instance],
    end: datetime,
    started: Mapping[str, Sequence[datetime]] | None = None,
    start: datetime | None = None,
) -> Iterator[tuple[Instance, Entry, datetime | None]]:
    """Each stop of a machine still there that can have kept it off after `start` (stops_of), and when it ran
    again (None: unknown). A stop before `start` whose machine ran again before it is yielded too: its
    hours inside the week are none."""
    known = _known(entries, started)
    for instance_id, made in stops_of(entries, start).items():
        instance = raw.get(instance_id)
        if instance is None:
            continue  # terminated since: nothing more to say about it
        for entry, until in off_periods(made, instance, end, known.get(instance_id, ())):
            yield instance, entry, until


def unsettled(
    entries: Sequence[Entry],
    raw: Mapping[str, Instance],
    end: datetime,
    started: Mapping[str, Sequence[datetime]],
    start: datetime | None = None,
) -> set[str]:
    """The machines a stop of which ran again at a time not yet known (worth asking CloudTrail about)."""
    return {instance.instance_id for instance, _, until in ends(entries, raw, end, started, start) if until is None}


def unknown_ends(
    entries: Sequence[Entry],
    raw: Mapping[str, Instance],
    end: datetime,
    started: Mapping[str, Sequence[datetime]],
    start: datetime | None = None,
) -> int:
    """The stops whose machine ran again at a time nothing recorded: left out of the hours off."""
    return sum(1 for *_, until in ends(entries, raw, end, started, start) if until is None)


def _known(entries: Sequence[Entry], started: Mapping[str, Sequence[datetime]] | None) -> dict[str, list[datetime]]:
    """The starts known of each machine: costguard's in the ledger, and those read elsewhere."""
    known = starts_in_ledger(entries)
    for instance_id, times in (started or {}).items():
        known[instance_id] = [*known.get(instance_id, []), *times]
    return known


def ran_again(entries: Sequence[Entry], raw: Mapping[str, Instance], start: datetime | None = None) -> set[str]:
    """The machines stopped this week, or off into it (stops_of), that were started after a stop (their launch
    time says so): their starts are worth reading, since one before their last may end an off-period sooner."""
    return {
        instance_id
        for instance_id, made in stops_of(entries, start).items()
        if (instance := raw.get(instance_id)) is not None and instance.launch_time > made[0].at
    }


def saved_by_stops(
    entries: Sequence[Entry],
    raw: Mapping[str, Instance],
    end: datetime,
    prices: PriceBook,
    worth: Sequence[Worth] = (),
    *,
    started: Mapping[str, Sequence[datetime]] | None = None,
    start: datetime | None = None,
) -> Saved:
    """Hours each stopped machine stayed stopped this week, and what that saved: from the stop, the saving on
    the bill the stop recorded (`list_hourly` says it was priced on the bill, $0 included; for older records
    and stops pressed in Slack, which record none, the price book's); from each later sweep that priced the
    machines costguard keeps stopped (`worth`), the price it found, until the next. The on-demand figure
    beside it: the list price the stop recorded, else the price book's.

    Each stop counts until the machine ran again (`started`: the starts known of each machine, besides its
    launch time and costguard's starts in `entries`); a stop whose end is unknown is not counted. Only the
    hours from `start` (the week's) count: a stop made before it counts from it, at the price the sweeps
    last found before it (`worth` read from a little before the week), else its own."""
    found: dict[str, list[tuple[datetime, float]]] = defaultdict(list)  # instance -> (when, USD/h), in order
    for record in sorted(worth, key=lambda w: w.at):
        for instance_id, price in record.usd_per_hour.items():
            found[instance_id].append((record.at, price))
    hours = usd = list_usd = 0.0
    for instance, entry, until in ends(entries, raw, end, started, start):
        if until is None:
            continue  # unknown, never counted as off (unknown_ends says how many)
        since = entry.at if start is None else max(entry.at, start)
        stopped = max(0.0, (until - since).total_seconds() / 3600)
        if not stopped:
            continue  # ran again before the week
        hours += stopped
        first = _hourly(entry, instance, prices)
        usd += _priced(entry.at, since, until, first, found.get(instance.instance_id, []))
        list_usd += stopped * _list_hourly(entry, prices)
    return Saved(hours, usd, list_usd)


def _priced(
    stopped: datetime, start: datetime, until: datetime, first: float, later: Sequence[tuple[datetime, float]]
) -> float:
    """USD from `start` to `until` of a stop made at `stopped`: `first` an hour (the stop's own), then each
    price found after the stop from its time on (those found before `start` set the price it starts at)."""
    total, at, price = 0.0, start, first
    for when, then in later:
        if when <= stopped:
            continue
        if when <= start:
            price = then
            continue
        if when >= until:
            break
        total += price * (when - at).total_seconds() / 3600
        at, price = when, then
    return total + price * max(0.0, (until - at).total_seconds() / 3600)


def _hourly(entry: Entry, instance: Instance, prices: PriceBook) -> float:
    if entry.list_hourly > 0:  # priced on the bill: what it recorded, $0 included
        return entry.hourly_saving
    if instance.lifecycle == "capacity-block" or instance.capacity_reservation_id:
        return 0.0  # stopped from Slack in paid capacity ("Stop anyway"): the slot is freed, nothing saved
    return entry.hourly_saving or prices.hourly(entry.instance_type, entry.region).usd_per_hour or 0.0


def _list_hourly(entry: Entry, prices: PriceBook) -> float:
    """The on-demand price beside the saving: the stop's own where it was priced on the bill, else the saving
    it recorded (it was the list price then), else the price book's (a stop from Slack records none)."""
    if entry.list_hourly > 0:
        return entry.list_hourly
    return entry.hourly_saving or prices.hourly(entry.instance_type, entry.region).usd_per_hour or 0.0
