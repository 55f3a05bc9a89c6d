"""The quarterly deep dive's collection: Cost Explorer month by month, Cost Anomaly Detection, region
prices, costguard's weekly records and commitment use. A failed read is one missing section, named in
the report, never a reason to send none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.commitments import CommitmentReader
from costguard.aws.costexplorer import cost_anomalies, monthly_spend
from costguard.aws.pricing import PriceBook
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger
from costguard.core.settings import IdlePolicy
from costguard.digest.handoff import AccountWeek, decode
from costguard.digest.quarterly.rules import (
    Anomaly,
    Line,
    Quarter,
    RegionPrice,
    jumps,
    month_starts,
    quarter_bounds,
)
from costguard.digest.spend import commitment_use
from costguard.state.weeks import WeekRecords

DIMENSION_KEYS = {"account": "LINKED_ACCOUNT", "region": "REGION", "instance type": "INSTANCE_TYPE"}


@dataclass
class QuarterCollector:
    ce: Any
    prices: PriceBook
    reader: CommitmentReader
    weeks: WeekRecords
    policy: IdlePolicy
    account: str
    governed_regions: Sequence[str]
    owner_tag_key: str
    team_tag_key: str
    jump_percent: float = 50.0
    jump_usd: float = 100.0
    region_threshold_usd: float = 100.0

    def collect(self, now: datetime) -> Quarter:
        start, end, label = quarter_bounds(now.date())
        months = month_starts(start, end)
        quarter = Quarter(label, months, [], region_threshold_usd=self.region_threshold_usd)
        groupings = [
            *((name, {"Type": "DIMENSION", "Key": key}) for name, key in DIMENSION_KEYS.items()),
            ("owner", {"Type": "TAG", "Key": self.owner_tag_key}),
            ("team", {"Type": "TAG", "Key": self.team_tag_key}),
        ]
        for name, group in groupings:
            try:
                spend = monthly_spend(self.ce, start, end, [group])
            except READ_ERRORS as exc:
                quarter.errors.append(f"spend by {name}: {error_code(exc)}")
                continue
            quarter.lines += [Line(name, key[0], tuple(by.get(m, 0.0) for m in months)) for key, by in spend.items()]
        self._types_and_regions(quarter, start, end)
        self._anomalies(quarter, start, end)
        quarter.weeks = self._weeks(start, end)
        quarter.commitments = commitment_use(
            self.ce,
            self.reader,
            datetime.combine(start, datetime.min.time(), UTC),
            datetime.combine(end, datetime.min.time(), UTC),
            now=now,
            errors=quarter.errors,
        )
        return quarter

    def _types_and_regions(self, quarter: Quarter, start: date, end: date) -> None:
        """Accelerated spend a month, and each accelerated type's price where it ran against elsewhere."""
        try:
            spend = monthly_spend(
                self.ce,
                start,
                end,
                [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}, {"Type": "DIMENSION", "Key": "REGION"}],
            )
        except READ_ERRORS as exc:
            quarter.errors.append(f"spend by instance type and region: {error_code(exc)}")
            return
        accelerated = [0.0] * len(quarter.months)
        for (instance_type, region), by in sorted(spend.items()):
            if not self.policy.is_accelerated(instance_type):
                continue
            for index, month in enumerate(quarter.months):
                accelerated[index] += by.get(month, 0.0)
            total = sum(by.values())
            if region not in self.governed_regions or total <= 0:
                continue
            everywhere = self.prices.across_regions(instance_type)
            here = everywhere.get(region)
            if not here:
                continue
            cheapest = tuple(sorted(everywhere.items(), key=lambda rp: (rp[1], rp[0]))[:3])
            quarter.regions.append(RegionPrice(instance_type, region, here, cheapest, total))
        quarter.accelerated = tuple(accelerated)

    def _anomalies(self, quarter: Quarter, start: date, end: date) -> None:
        try:
            found = cost_anomalies(self.ce, start, end)
        except READ_ERRORS as exc:
            quarter.errors.append(f"Cost Anomaly Detection: {error_code(exc)}")
            found = None
        if found is None:  # off (or unreadable): month-over-month jumps of the lines instead
            lines = [x for x in quarter.lines if x.dimension in DIMENSION_KEYS]
            quarter.anomalies = jumps(lines, quarter.months, percent=self.jump_percent, at_least_usd=self.jump_usd)
            quarter.anomaly_source = (
                f"month over month: rises of more than {self.jump_percent:.0f}% and ${self.jump_usd:,.0f}; "
                "Cost Anomaly Detection is not on"
            )
            return
        quarter.anomaly_source = "AWS Cost Anomaly Detection"
        quarter.anomalies = sorted((_anomaly(a) for a in found), key=lambda a: -a.impact_usd)

    def _weeks(self, start: date, end: date) -> list[AccountWeek]:
        weeks = []
        for body in self.weeks.between(self.account, start, end):
            try:
                weeks.append(decode(body))
            except EventValidationError as exc:
                logger.warning("weekly record unreadable", reason=str(exc)[:300])
        return weeks


def _anomaly(raw: Any) -> Anomaly:
    causes = raw.get("RootCauses") or [{}]
    cause = causes[0]
    where = " / ".join(str(cause[k]) for k in ("Service", "Region", "LinkedAccount", "UsageType") if cause.get(k))
    impact = float((raw.get("Impact") or {}).get("TotalImpact", 0.0) or 0.0)
    try:
        started = date.fromisoformat(str(raw.get("AnomalyStartDate", ""))[:10])
    except ValueError:
        started = date.min
    return Anomaly(started, impact, where or str(raw.get("DimensionValue", "")), "Cost Anomaly Detection", "")
