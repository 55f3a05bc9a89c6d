"""The bill of one region for one sweep: read once, when the sweep has a warning or a stop to price, and
the sweep's warnings and stops priced on it together (`rules/money.py` decides what a price means).

They are priced in the order the machines will go: the machines already warned whose grace is running
first (their stops are coming), then this sweep's stops, then the warnings that will stop; each priced
as if the ones before it were gone. A warning that stops nothing by itself takes no saving from others.
Within each of these, the dearest machine comes first: where stops overshoot what a Savings Plan leaves on
demand, the last one made is then the cheapest, and the room it frees cannot make an earlier one pointless
(stopped cheapest first, a $55/h p5 taking the last $25/h of spill would free room for the g5 stopped
before it, and that stop would have saved nothing).

Over its off-period, a stop is priced on the region's spill profile, learned gross of costguard's own stops (the
spill had the machines costguard kept stopped then been running: `spill_found`): the machines costguard keeps
stopped now take their share of it first, each until it is expected to run again (`worth.in_force`), read once
a sweep where a profile prices a warning or a stop. A Saturday's thirtieth stop, priced on the spill of Monday's
morning as if the twenty-nine still off did not take it, saved nothing on the bill.

The machines costguard keeps stopped are priced on the same bill (`worth`): what each saves now, as if it
were stopped first from a fleet where it runs. A stop priced at night, while a Savings Plan had room for
most of it, saves its whole price once the day's work fills the plan; the digest counts each stopped hour
at the price the sweeps last found for it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from costguard.aws.billing import BillingReader
from costguard.aws.ec2 import Ec2
from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.bill import Bill, Exposure, SpillProfile
from costguard.core.money import UNREAD_HOLDS, UNREAD_PLANS, UNREAD_RIS, Billing
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.money import PRICED, priced
from costguard.idle.rules.restarts import costguards_stop
from costguard.idle.rules.worth import (
    LONGEST_OFF,
    InForce,
    counted_until,
    in_force,
    judged,
    over_its_off_period,
    stopped_until,
)
from costguard.state.spill import SpillLog

Decided = tuple[Instance, Decision]


class SweepBill:
    def __init__(
        self,
        reader: BillingReader | None,
        prices: PriceBook,
        running: Callable[[], Sequence[Instance]],
        now: datetime,
        region: str,
        *,
        policy: IdlePolicy | None = None,
        profile: SpillLog | None = None,
        stopped: Callable[[], Sequence[Instance]] | None = None,
    ) -> None:
        """`running`: the region's running accelerated machines, asked only when a bill is read. `profile`: the
        region's spill by quarter-hour of the week, read to price a stop over its off-period and learned from
        this sweep's bill (None, or no `policy`: priced on this hour alone). `stopped`: the machines costguard
        keeps stopped (`kept_stopped`), asked only where a profile prices a stop (None: none kept)."""
        self.reader, self.prices, self.running, self.now, self.region = reader, prices, running, now, region
        self.policy, self.profile, self.stopped = policy, profile, stopped
        self._waiting: list[Instance] = []
        self._billing: Billing | None = None  # read for this sweep's pricing
        self._week: SpillProfile | None = None  # the region's spill profile, once read
        self.week_unread = False  # its read failed (a throttle): not written over this sweep
        self._week_read = False

    def note(self, instance: Instance, decision: Decision) -> None:
        """A machine warned whose grace period runs: its stop is coming, and counts before new ones."""
        if decision.action is Action.WAIT and decision.will_stop:
            self._waiting.append(instance)

    def priced(self, decided: Sequence[Decided]) -> list[Decided]:
        """The sweep's decisions, each warning and stop as the bill sees it (the others as they were). Without
        a reader, only what a machine says of itself counts (a Capacity Block or a capacity reservation)."""
        pricing = [(i, d) for i, d in decided if d.action in PRICED]
        if not pricing:
            return list(decided)
        self._billing = self._read()
        bill = Bill(self._billing, self.now, list_price=self._list)
        for instance in sorted(self._waiting, key=self._dearest_first):
            bill.stopped(instance, bill.price(instance, self._list(instance)))
        out: dict[str, Decision] = {}
        week = self._profile()
        kept = self._in_force(self._billing, week) if week is not None and self.policy is not None else None
        if kept is None:
            week = None  # the stops still in force unknown: the profile's spill is not all there is to take
        taken: dict[tuple[str, int], float] = defaultdict(float)
        for instance, decision in sorted(pricing, key=lambda item: (_going_first(item), self._dearest_first(item[0]))):
            exposure = bill.exposure(instance, self._list(instance))
            marginal = exposure.marginal
            if self.reader is None and marginal.saves:
                continue  # nothing read: a saving is not claimed, the decision stands as it was
            if self.policy is None:
                out[instance.instance_id] = verdict = priced(decision, marginal)
            else:
                found, until = over_its_off_period(
                    exposure, week, self.now, decision, instance, self.policy, taken, kept
                )
                out[instance.instance_id] = verdict = judged(decision, marginal, found, until)
                if found is not None and verdict.action in PRICED and verdict.will_stop:
                    for key, amount in found.takes.items():
                        taken[key] += amount
            if verdict.action in PRICED and verdict.will_stop:
                bill.stopped(instance, marginal)
        return [(i, out.get(i.instance_id, d)) for i, d in decided]

    def spill_found(self, stopped: Sequence[Instance] = ()) -> dict[str, float]:
        """What the plans and RIs would leave billed on demand now were the machines costguard keeps `stopped`
        running, on the bill read for this sweep (by layer), for the region's profile: learned gross of
        costguard's own stops, which each take their share again while they are in force. Nothing where no
        bill was read whole this sweep."""
        billing = self._billing
        if billing is None or billing.unread:
            return {}
        return Bill(_with_running(billing, lately(stopped, self.now)), self.now, list_price=self._list).spill_now()

    def _in_force(self, billing: Billing | None, week: SpillProfile) -> InForce | None:
        """What the machines costguard keeps stopped take of the profile's spill until each is expected to run
        again, priced in turn dearest first as if they ran; None where they could not be read (logged)."""
        if self.stopped is None or billing is None or self.policy is None:
            return InForce()
        try:
            stopped = counted(self.stopped(), self.now)
        except Exception as exc:  # priced on this hour, as with no profile: never the sweep's end
            logger.warning("stopped machines not read: priced on this hour", region=self.region, error=str(exc)[:200])
            return None
        gross = Bill(_with_running(billing, stopped), self.now, list_price=self._list)
        exposed: list[tuple[str, Exposure, datetime]] = []
        for instance in sorted((replace(i, state="running") for i in stopped), key=self._dearest_first):
            exposure = gross.exposure(instance, self._list(instance))
            gross.stopped(instance, exposure.marginal)
            exposed.append((instance.instance_id, exposure, stopped_until(instance, self.policy, self.now)))
        return in_force(exposed, week, self.now)

    def week(self) -> SpillProfile | None:
        """The region's spill profile as this sweep read it (None: none kept yet, or not read)."""
        return self._profile()

    def _profile(self) -> SpillProfile | None:
        """The region's spill profile, read once (None: not kept, none yet, or not read: logged)."""
        if self.profile is None:
            return None
        if not self._week_read:
            self._week_read = True
            try:
                self._week = self.profile.read(self.region)
            except Exception as exc:  # a profile that cannot be read is no profile: priced on this hour
                logger.warning("spill profile not read: priced on this hour", region=self.region, error=str(exc)[:200])
                self._week, self.week_unread = None, True
        return self._week

    def worth(self, stopped: Sequence[Instance]) -> dict[str, float]:
        """What each of the machines costguard keeps `stopped` saves the bill now (USD an hour): priced in turn,
        dearest first, as if stopped first from a fleet where they run (with this sweep's own stops, whose
        prices were taken without them: the two add up to what all the stops save together). On the bill read
        for this sweep's pricing, else read now. Nothing where no reader is given, the bill could not be read
        whole, or a Savings Plan is judged on its recent use (a use measured while these machines were
        stopped: their own absence made its room): the stops' own prices stand. Nor for a machine whose
        price is unknown."""
        if not stopped or self.reader is None:
            return {}
        billing = self._billing if self._billing is not None else self._read()
        self._billing = billing
        if billing.unread:
            return {}
        bill = Bill(_with_running(billing, stopped), self.now, list_price=self._list)
        if billing.plans and not bill.judges_plans_hourly:
            return {}
        out: dict[str, float] = {}
        for instance in sorted((replace(i, state="running") for i in stopped), key=self._dearest_first):
            marginal = bill.price(instance, self._list(instance))
            if marginal.usd_per_hour is not None:
                out[instance.instance_id] = marginal.usd_per_hour
            bill.stopped(instance, marginal)
        return out

    def _read(self) -> Billing:
        if self.reader is None:  # only the instances' own fields: a hold they name counts as paid
            return Billing(self.region, unread=(UNREAD_HOLDS,))
        try:
            billing = self.reader.read(self.running(), self.now)
        except Exception:  # an answer costguard cannot read must not cost the region its sweep: priced on demand
            logger.exception("bill not read: priced on demand", region=self.region)
            return Billing(self.region, unread=(UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS))
        if billing.unread:
            logger.warning("bill partly unread: priced on demand", region=billing.region, unread=billing.unread)
        return billing

    def _dearest_first(self, instance: Instance) -> float:
        return -(self._list(instance) or 0.0)

    def _list(self, instance: Instance) -> float | None:
        return self.prices.hourly(instance.instance_type, instance.region).usd_per_hour


def kept_stopped(ec2: Ec2, policy: IdlePolicy) -> list[Instance]:
    """The region's accelerated machines costguard stopped and that are still off (its last stop was costguard's):
    one DescribeInstances walk, filtered server-side."""
    return [
        i
        for i in ec2.iter_instances(stopped_filters(policy))
        if i.state == "stopped" and policy.is_accelerated(i.instance_type) and costguards_stop(i) is not None
    ]


def lately(stopped: Sequence[Instance], now: datetime) -> list[Instance]:
    """The machines costguard keeps stopped that are expected back: those the spill profile is learned gross of
    now (they take their share of it while they are off, as do those it counted a week ago: `counted`).
    Expected back: a start costguard promised (`start-at`)
    still to come, or a stop within LONGEST_OFF of now. One stopped longer ago with no start promised is not
    expected back by anything costguard knows: counted as running, it would swell the learned spill for good
    (every stop would then look worth more than the bill saves)."""
    return [i for i in stopped if _expected_back(i, now)]


def counted(stopped: Sequence[Instance], now: datetime) -> list[Instance]:
    """The machines costguard keeps stopped that the profile's quarter-hours to come were learned gross of, and
    that take their share of them (`worth.in_force`): those expected back now (`lately`), and those stopped
    longer ago that the sweeps a week before still counted as running (`worth.counted_until`)."""
    return [i for i in stopped if _expected_back(i, now) or _counted_a_week_ago(i, now)]


def _counted_a_week_ago(instance: Instance, now: datetime) -> bool:
    stopped_at = costguards_stop(instance)
    return stopped_at is not None and counted_until(stopped_at) > now


def _expected_back(instance: Instance, now: datetime) -> bool:
    start_at = formatting.parse_time(instance.tags.get(tags.START_AT))
    if start_at is not None and start_at > now:
        return True
    stopped_at = costguards_stop(instance)
    return stopped_at is not None and now - stopped_at <= LONGEST_OFF


def stopped_filters(policy: IdlePolicy) -> list[Any]:
    """The region's stopped accelerated machines that costguard stopped."""
    return [
        {"Name": "instance-state-name", "Values": ["stopped"]},
        {"Name": "tag-key", "Values": [tags.STOPPED_AT]},
        {"Name": "instance-type", "Values": list(policy.accelerator_families)},
    ]


def _with_running(billing: Billing, stopped: Sequence[Instance]) -> Billing:
    """The bill as if these stopped machines ran too (a machine already among the running counts once)."""
    if not stopped:
        return billing
    return replace(billing, running=(*billing.running, *(replace(i, state="running") for i in stopped)))


def _going_first(item: Decided) -> int:
    decision = item[1]
    if decision.action is Action.STOP:
        return 0
    return 1 if decision.will_stop else 2
