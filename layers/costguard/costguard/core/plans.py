"""Savings Plans judged hour by hour on what runs now: the EC2 Instance plans of a family and region first, then
the Compute plans, each layer's commitment against the eligible usage the Reserved Instances leave; what exceeds
a commitment is billed on demand (the spill), and is what stops can save. Pure: no I/O, no clock."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.core.money import Plan, Reserved, family
from costguard.core.records import Instance
from costguard.core.reserved import ri_uncovered


@dataclass
class _Layer:
    """Savings Plans applied together this hour: all the Compute plans, or the EC2 Instance plans of one family
    and region (AWS applies these first, and what they leave to the Compute plans)."""

    commitment: float  # USD/h
    room: float  # the on-demand worth of usage the commitment pays for, USD/h
    spill: float = 0.0  # the eligible usage beyond it now, at the on-demand rate, USD/h: what stops can save

    def text(self) -> str:
        return f"the Savings Plan's ${self.commitment:,.2f}/h commitment"


COMPUTE = "Compute"


class PlanHours:
    """The Savings Plans of a region judged hour by hour on what runs now, where each plan's commitment and
    rate are known and every machine's on-demand price is given.

    A plan's eligible usage now is the on-demand price of every machine of the pool it covers (running, not
    Spot, not in a block or a paid reservation), less the share the RIs cover (attributed once, machine by
    machine: `ri_uncovered`), at the plan's rate; what exceeds its commitment is billed on demand (the spill),
    and a stop saves that spill while it lasts. EC2 Instance plans apply first, what they spill goes to the
    Compute plans (`_Layer`). Usage costguard does not see (other regions, non-GPU EC2, Fargate, Lambda on a
    Compute plan) is taken as none: conservative, a stop is never priced as saving while the GPU fleet alone
    leaves the plan room. A machine whose price is unknown is taken as using none of it."""

    def __init__(self, layers: dict[str, _Layer], list_price: Callable[[Instance], float | None]) -> None:
        self.layers = layers
        self._list_price = list_price

    @classmethod
    def build(
        cls,
        plans: Sequence[Plan],
        pool: Sequence[Instance],
        reserved: Sequence[Reserved],
        list_price: Callable[[Instance], float | None] | None,
        now: datetime,
    ) -> PlanHours | None:
        """The layers and their spill now; None where a plan covering the pool lacks its commitment or rate,
        or the machines' prices are not given: the plans are then judged on their recent use."""
        applied = [p for p in plans if p.in_force(now) and any(p.covers(i, now) for i in pool)]
        if list_price is None or not applied or not all(p.hourly for p in applied):
            return None
        layers: dict[str, _Layer] = {}
        for p in applied:
            layer = layers.setdefault(layer_key(p), _Layer(0.0, 0.0))
            layer.commitment += p.commitment_usd_per_hour or 0.0
            layer.room += (p.commitment_usd_per_hour or 0.0) / (p.rate or 1.0)
        hours = cls(layers, list_price)
        use: dict[str, float] = defaultdict(float)
        uncovered = ri_uncovered(reserved, pool)
        for i in pool:
            use[hours._inner(i) or COMPUTE] += (list_price(i) or 0.0) * uncovered[i.instance_id]
        for key, layer in layers.items():
            if key != COMPUTE:
                layer.spill = max(0.0, use[key] - layer.room)
                use[COMPUTE] += layer.spill
        if COMPUTE in layers:
            layers[COMPUTE].spill = max(0.0, use[COMPUTE] - layers[COMPUTE].room)
        return hours

    def judges(self, plans: Sequence[Plan]) -> bool:
        """Whether every plan covering a machine is one of these layers (else it is judged on recent use)."""
        return all(layer_key(p) in self.layers for p in plans)

    def price(self, instance: Instance, on_demand: float | None, share: float) -> tuple[float | None, str]:
        """Its share of the spill now: what its stop takes off the on-demand bill (the tightest layer's)."""
        tightest = min(self._chain(instance), key=lambda layer: layer.spill)
        if tightest.spill <= 0:
            return (0.0, f"covered: {tightest.text()} is not used up by what runs now")
        why = f"on demand: {tightest.text()} is used up by what runs now"
        if on_demand is None:
            return (None, why)
        return (round(min(on_demand * share, tightest.spill), 4), why)

    def spend(self, instance: Instance, share: float) -> None:
        """A stop takes its eligible usage (`share` of its price: what the RIs leave) off each layer in turn:
        the first layer's spill shrinks by it, and the next one's by what the first one spilled of it."""
        flow = (self._list_price(instance) or 0.0) * share
        for layer in self._chain(instance):
            taken = min(layer.spill, flow)
            layer.spill -= taken
            flow = taken

    def spills(self) -> dict[str, float]:
        """Each layer's spill now (USD/h at the on-demand rate), by its key ("sp:Compute", "sp:p4d@us-east-1")."""
        return {f"sp:{key}": round(layer.spill, 4) for key, layer in self.layers.items()}

    def chain_keys(self, instance: Instance) -> tuple[str, ...]:
        """The keys of the layers this machine's usage goes through, as `spills` names them."""
        return tuple(f"sp:{k}" for k in (self._inner(instance), COMPUTE) if k is not None and k in self.layers)

    def _inner(self, instance: Instance) -> str | None:
        """The EC2 Instance plans' layer that applies to this machine first, if any."""
        key = f"{family(instance.instance_type)}@{instance.region}"
        return key if key in self.layers else None

    def _chain(self, instance: Instance) -> list[_Layer]:
        """The layers this machine's usage goes through: its family's EC2 Instance plans, then the Compute ones."""
        return [self.layers[k] for k in (self._inner(instance), COMPUTE) if k is not None and k in self.layers]


def layer_key(plan: Plan) -> str:
    return COMPUTE if plan.kind == COMPUTE else f"{plan.family}@{plan.region}"


# ------------------------------------------------------------------------------ Reserved Instances, as applied
