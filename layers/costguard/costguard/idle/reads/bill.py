"""The bill of one region for one sweep: read once, on the sweep's first warning or stop, and each warning
and stop priced on it in turn (`rules/money.py` decides what a price means)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from costguard.aws.billing import BillingReader
from costguard.aws.pricing import PriceBook
from costguard.core.money import Bill, Billing
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.money import PRICED, priced


class SweepBill:
    def __init__(
        self, reader: BillingReader | None, prices: PriceBook, candidates: Sequence[Instance], now: datetime
    ) -> None:
        self.reader, self.prices, self.candidates, self.now = reader, prices, candidates, now
        self._bill: Bill | None = None

    def price(self, instance: Instance, decision: Decision) -> Decision:
        """The decision as the bill sees it. Without a reader, only what the instance says of itself counts
        (a Capacity Block or a capacity reservation it runs in): a warning or stop elsewhere is unchanged."""
        if decision.action not in PRICED:
            return decision
        if self._bill is None:
            billing = self.reader.read(self.candidates, self.now) if self.reader else Billing(instance.region)
            if billing.unread:
                logger.warning("bill partly unread: priced on demand", region=billing.region, unread=billing.unread)
            self._bill = Bill(billing, self.now)
        on_demand = self.prices.hourly(instance.instance_type, instance.region).usd_per_hour
        marginal = self._bill.price(instance, on_demand)
        if self.reader is None and marginal.saves:
            return decision
        decided = priced(decision, marginal)
        if decided.action in (Action.WARN, Action.STOP):  # its saving is taken: the next machine is priced without it
            self._bill.stopped(instance, marginal)
        return decided
