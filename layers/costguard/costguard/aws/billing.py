"""Reads what the bill knows of one region, once per sweep: the Reserved Instances and capacity
reservations in force, the Savings Plans and their recent use, the Spot prices of the Spot machines.
Takes its clients. Every read is read-only; a read that fails (denied, throttled past botocore's
retries) is named in `Billing.unread` and the money model prices on demand where it needed it.

Which call answers which question, and what each costs (docs/rules.md, "What a stop is worth"):
- EC2 DescribeReservedInstances (free): the RIs in force, zonal or regional, their platform and tenancy;
- EC2 DescribeCapacityReservations (free): the capacity reservations and Capacity Blocks, their ends;
- EC2 DescribeSpotPriceHistory (free): the current Spot price of each Spot machine's type and zone;
- Savings Plans DescribeSavingsPlans (free): the plans in force, what they cover and their hourly commitment;
- Cost Explorer GetSavingsPlansUtilizationDetails and GetSavingsPlansCoverage ($0.01 each): how much
  of each plan was used lately and at what rate (its used commitment over that usage's on-demand worth),
  and the eligible usage billed on demand beside it. Cost Explorer updates
  once a day, so its answers are kept for the day by the container (`CE_MEMORY`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from costguard.aws.clients import READ_ERRORS, error_code, utc_time
from costguard.aws.commitments import ReadOnce, reserved_zone
from costguard.core.money import (
    LINUX,
    UNREAD_HOLDS,
    UNREAD_PLAN_USE,
    UNREAD_PLANS,
    UNREAD_RIS,
    Billing,
    Hold,
    Plan,
    Reserved,
)
from costguard.core.observability import logger
from costguard.core.records import Instance

# The days of Cost Explorer's answers a plan's recent use is judged on (Cost Explorer lags about a day).
RECENT_DAYS = 2


class PlanUse(NamedTuple):
    """A plan's recent use, from GetSavingsPlansUtilizationDetails."""

    percent: float  # UtilizationPercentage
    rate: float | None  # UsedCommitment / Savings.OnDemandCostEquivalent: its rate, of on demand; None: not given


# Cost Explorer's answers of a day, per account: (day, use by plan ARN, spill USD/h).
CE_MEMORY: dict[date, tuple[dict[str, PlanUse], float | None] | None] = {}  # None: denied that day
HOLD_STATES = ("active", "scheduled", "payment-pending")


@dataclass
class BillingReader:
    ec2: Any  # the region's EC2 client
    savingsplans: Any | None  # None where Savings Plans are not read (SavingsPlansPricing=false)
    ce: Any | None
    region: str
    unread: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "DescribeReservedInstances: AccessDenied", to say why

    def read(self, running: Sequence[Instance], now: datetime, *, once: ReadOnce | None = None) -> Billing:
        """What the bill knows of the region now, for the `running` machines an RI could cover. `once`: the
        invocation's listings of Reserved Instances and Savings Plans, shared with its other readers."""
        self.unread, self.errors = [], []
        once = once or ReadOnce()
        reserved = self._reserved(once)
        holds = self._holds()
        plans, spill = self._plans(now, once)
        spot = self._spot_prices([i for i in running if i.lifecycle == "spot"], now)
        return Billing(
            region=self.region,
            running=tuple(running),
            reserved=tuple(reserved),
            holds=tuple(holds),
            plans=tuple(plans),
            spot_prices=spot,
            plan_spill_usd_per_hour=spill,
            unread=tuple(self.unread),
        )

    def _reserved(self, once: ReadOnce) -> list[Reserved]:
        try:
            listed = once.reserved(self.ec2)
        except READ_ERRORS as exc:
            self._failed(UNREAD_RIS, "DescribeReservedInstances", exc)
            return []
        out = []
        for ri in listed:
            out.append(
                Reserved(
                    reservation_id=ri["ReservedInstancesId"],
                    instance_type=ri["InstanceType"],
                    count=int(ri.get("InstanceCount", 1)),
                    start=utc_time(ri["Start"]),
                    end=utc_time(ri["End"]),
                    zone=reserved_zone(ri),
                    platform=_platform(ri.get("ProductDescription", LINUX)),
                    tenancy=ri.get("InstanceTenancy", "default"),
                )
            )
        return out

    def _holds(self) -> list[Hold]:
        out: list[Hold] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Filters": [{"Name": "state", "Values": list(HOLD_STATES)}], "MaxResults": 1000}
            if token:
                params["NextToken"] = token
            try:
                response = self.ec2.describe_capacity_reservations(**params)
            except READ_ERRORS as exc:
                self._failed(UNREAD_HOLDS, "DescribeCapacityReservations", exc)
                return out
            for cr in response.get("CapacityReservations", []):
                out.append(
                    Hold(
                        reservation_id=cr["CapacityReservationId"],
                        instance_type=cr.get("InstanceType", ""),
                        zone=cr.get("AvailabilityZone", ""),
                        total=int(cr.get("TotalInstanceCount", 0)),
                        available=int(cr.get("AvailableInstanceCount", 0)),
                        end=utc_time(cr["EndDate"]) if cr.get("EndDate") else None,
                        block=cr.get("ReservationType") == "capacity-block",
                        state=cr.get("State", "active"),
                        start=utc_time(cr["StartDate"]) if cr.get("StartDate") else None,
                    )
                )
            token = response.get("NextToken")
            if not token:
                return out

    def _plans(self, now: datetime, once: ReadOnce) -> tuple[list[Plan], float | None]:
        if self.savingsplans is None:
            return [], None
        try:
            raw = once.plans(self.savingsplans)
        except READ_ERRORS as exc:
            self._failed(UNREAD_PLANS, "DescribeSavingsPlans", exc)
            return [], None
        ec2_plans = [p for p in raw if p.get("savingsPlanType") in ("Compute", "EC2Instance")]
        if not ec2_plans:
            return [], None
        used, spill = self._recent_use(now.date())
        return [_plan(p, used.get(p.get("savingsPlanArn", ""))) for p in ec2_plans], spill

    def _recent_use(self, today: date) -> tuple[dict[str, PlanUse], float | None]:
        if today in CE_MEMORY:
            remembered = CE_MEMORY[today]
            if remembered is None:  # denied today already: said again, not asked again ($0.01 a call)
                self.unread.append(UNREAD_PLAN_USE)
                return {}, None
            return remembered
        if self.ce is None:
            self.unread.append(UNREAD_PLAN_USE)
            return {}, None
        try:
            answer: tuple[dict[str, PlanUse], float | None] | None = (plans_use(self.ce, today), _spill(self.ce, today))
        except READ_ERRORS as exc:
            self._failed(UNREAD_PLAN_USE, "GetSavingsPlansUtilizationDetails", exc)
            answer = None
        CE_MEMORY.clear()
        CE_MEMORY[today] = answer
        return answer if answer is not None else ({}, None)

    def _spot_prices(self, spot: Sequence[Instance], now: datetime) -> dict[tuple[str, str], float]:
        if not spot:
            return {}
        try:
            return spot_prices(self.ec2, sorted({i.instance_type for i in spot}), now)
        except READ_ERRORS as exc:
            self._failed("Spot prices", "DescribeSpotPriceHistory", exc)
            return {}

    def _failed(self, what: str, call: str, exc: BaseException) -> None:
        self.unread.append(what)
        self.errors.append(f"{call}: {error_code(exc)}")
        logger.warning("billing read failed: priced on demand", call=call, region=self.region, error=error_code(exc))


def _platform(description: str) -> str:
    return description.replace(" (Amazon VPC)", "").strip() or LINUX


def _plan(p: Mapping[str, Any], use: PlanUse | None) -> Plan:
    """A plan as DescribeSavingsPlans gives it, with its recent use (None: not read)."""
    return Plan(
        plan_id=p["savingsPlanId"],
        kind=p["savingsPlanType"],
        start=utc_time(p["start"]) if p.get("start") else None,
        end=utc_time(p["end"]),
        family=p.get("ec2InstanceFamily", ""),
        region=p.get("region", ""),
        used_percent=use.percent if use else None,
        commitment_usd_per_hour=_number(p.get("commitment")),
        rate=use.rate if use else None,
    )


def _number(text: Any) -> float | None:
    """A decimal string of the APIs ("12.5"); None where absent or not a number."""
    try:
        return float(text) if text not in (None, "") else None
    except (TypeError, ValueError):
        return None


def plans_use(ce: Any, today: date) -> dict[str, PlanUse]:
    """Each Savings Plan's utilization (%) over the recent days, and its rate (the commitment it used over the
    on-demand worth of the usage it covered, where both are given and above 0), by ARN."""
    period = {"Start": (today - timedelta(days=RECENT_DAYS)).isoformat(), "End": today.isoformat()}
    used: dict[str, PlanUse] = {}
    token: str | None = None
    while True:
        params: dict[str, Any] = {"TimePeriod": period}
        if token:
            params["NextToken"] = token
        details = ce.get_savings_plans_utilization_details(**params)
        for detail in details.get("SavingsPlansUtilizationDetails", []):
            spent = _number(detail["Utilization"].get("UsedCommitment"))
            worth = _number((detail.get("Savings") or {}).get("OnDemandCostEquivalent"))
            rate = spent / worth if spent and worth and 0 < spent <= worth else None  # a plan costs less than on demand
            used[detail["SavingsPlanArn"]] = PlanUse(float(detail["Utilization"]["UtilizationPercentage"]), rate)
        token = details.get("NextToken")
        if not token:
            return used


def _spill(ce: Any, today: date) -> float | None:
    try:
        return plans_spill(ce, today)
    except READ_ERRORS as exc:  # the plans' use is known: a stop then saves on demand, as without a spill
        logger.warning("savings plans coverage not read", error=str(exc)[:200])
        return None


def plans_spill(ce: Any, today: date) -> float:
    """What the plans' eligible usage cost on demand per hour, over the recent days: what stops can save
    while the plans are used up."""
    period = {"Start": (today - timedelta(days=RECENT_DAYS)).isoformat(), "End": today.isoformat()}
    coverage = ce.get_savings_plans_coverage(TimePeriod=period, Granularity="DAILY")
    on_demand = sum(
        float((c.get("Coverage") or {}).get("OnDemandCost") or 0) for c in coverage.get("SavingsPlansCoverages", [])
    )
    return round(on_demand / (24 * RECENT_DAYS), 4)


def spot_prices(ec2: Any, types: Sequence[str], now: datetime) -> dict[tuple[str, str], float]:
    """The latest Spot price of each type in each zone."""
    response = ec2.describe_spot_price_history(
        InstanceTypes=list(types), ProductDescriptions=[LINUX], StartTime=now, MaxResults=1000
    )
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    for entry in response.get("SpotPriceHistory", []):
        key = (entry["InstanceType"], entry.get("AvailabilityZone", ""))
        moment = utc_time(entry["Timestamp"])
        if key not in latest or moment > latest[key][0]:
            latest[key] = (moment, float(entry["SpotPrice"]))
    return {k: v[1] for k, v in latest.items()}
