"""What costguard's stops saved this week: hours each stopped machine stayed off, at what the bill saved."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.state.entries import Entry
from costguard.state.worth import Worth


class Saved(NamedTuple):
    hours: float
    usd: float  # on the bill
    list_usd: float  # the same hours at the on-demand price, beside it


def saved_by_stops(
    entries: Sequence[Entry],
    raw: Mapping[str, Instance],
    end: datetime,
    prices: PriceBook,
    worth: Sequence[Worth] = (),
) -> Saved:
    """Hours each stopped machine stayed stopped this week, and what that saved: from the stop, the saving on
    the bill the stop recorded (`list_hourly` says it was priced on the bill, $0 included; for older records
    and stops pressed in Slack, which record none, the price book's); from each later sweep that priced the
    machines costguard keeps stopped (`worth`), the price it found, until the next. The on-demand figure
    beside it: the list price the stop recorded, else the price book's.

    A machine stopped several times in the week is off from each stop until the next one at the latest
    (someone started it in between), and from its last stop until it was launched again or the week ends."""
    stops: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.kind.stopped and entry.applied:
            stops[entry.instance_id].append(entry)
    found: dict[str, list[tuple[datetime, float]]] = defaultdict(list)  # instance -> (when, USD/h), in order
    for record in sorted(worth, key=lambda w: w.at):
        for instance_id, price in record.usd_per_hour.items():
            found[instance_id].append((record.at, price))
    hours = usd = list_usd = 0.0
    for instance_id, made in stops.items():
        instance = raw.get(instance_id)
        if instance is None:
            continue  # terminated since: nothing more to say about it
        made.sort(key=lambda e: e.at)
        for entry, after in zip(made, [*made[1:], None], strict=True):
            until = _back_on(entry, instance, end)
            if after is not None:
                until = min(until, after.at) if until is not None else None
            if until is None:
                continue
            stopped = max(0.0, (until - entry.at).total_seconds() / 3600)
            hours += stopped
            usd += _priced(entry.at, until, _hourly(entry, instance, prices), found.get(instance_id, []))
            list_usd += stopped * _list_hourly(entry, prices)
    return Saved(hours, usd, list_usd)


def _priced(start: datetime, until: datetime, first: float, later: Sequence[tuple[datetime, float]]) -> float:
    """USD from `start` to `until`: `first` an hour, then each later price from its time on."""
    total, at, price = 0.0, start, first
    for when, then in later:
        if when <= start:
            continue
        if when >= until:
            break
        total += price * (when - at).total_seconds() / 3600
        at, price = when, then
    return total + price * max(0.0, (until - at).total_seconds() / 3600)


def _back_on(entry: Entry, instance: Instance, end: datetime) -> datetime | None:
    """When the machine stopped by `entry` ran again, as far as the week can tell; None when unknown."""
    if instance.state == "stopped":
        return end
    if instance.launch_time > entry.at:
        return instance.launch_time
    return None


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
