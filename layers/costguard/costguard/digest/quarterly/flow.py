"""The quarterly deep dive's flow: its collection (Cost Explorer month by month, Cost Anomaly Detection,
region prices, costguard's weekly records and commitment use; a failed read is one missing section,
named in the report, never a reason to send none), then its post with a chart and a CSV, once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.commitments import CommitmentReader
from costguard.aws.costexplorer import cost_anomalies, monthly_spend
from costguard.aws.pricing import PriceBook
from costguard.core.errors import EventValidationError
from costguard.core.formatting import plural
from costguard.core.observability import logger, metrics
from costguard.core.settings import IdlePolicy
from costguard.digest.handoff import AccountWeek, decode
from costguard.digest.posting import Attachment, DigestIncomplete, post_with_files
from costguard.digest.quarterly.rules import (
    Anomaly,
    Line,
    Quarter,
    RegionPrice,
    chart_png,
    csv_text,
    jumps,
    month_starts,
    quarter_bounds,
    quarter_message,
)
from costguard.digest.spend import commitment_use
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims
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
        quarter.weeks = self._weeks(start, end, quarter.errors)
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

    def _weeks(self, start: date, end: date, errors: list[str]) -> list[AccountWeek]:
        """The quarter's weeks as their digests counted them; a week posted whose figures were never kept, or
        cannot be read, is said among what is not available (its digest's figures are not in the quarter's)."""
        weeks: list[AccountWeek] = []
        unkept: list[str] = []
        unread = 0
        for body in self.weeks.between(self.account, start, end, unkept):
            try:
                weeks.append(decode(body))
            except EventValidationError as exc:
                unread += 1
                logger.warning("weekly record unreadable", reason=str(exc)[:300])
        if unkept:
            errors.append(f"the figures of the weeks of {', '.join(unkept)} (never kept)")
        if unread:
            errors.append(f"the figures of {plural(unread, 'week')} (unreadable)")
        return weeks


def deep_dive(
    collector: QuarterCollector, *, notifier: SlackNotifier, claims: Claims, channel: str, now: datetime
) -> dict[str, Any]:
    """The quarter collected and posted with its chart and CSV, once; what it said, for the handler."""
    quarter = collector.collect(now)
    slug = quarter.label.lower().replace(" ", "-")
    posted = post_with_files(
        notifier,
        claims,
        key=f"deep-dive:{quarter.months[0]:%Y-%m}",
        channel=channel,
        message=lambda: quarter_message(quarter, now),
        attachments=[
            Attachment("chart", lambda: chart_png(quarter), f"ec2-{slug}.png",
                       "EC2 compute a month: accelerated types and the rest"),
            Attachment("csv", lambda: csv_text(quarter).encode(), f"ec2-deep-dive-{slug}.csv",
                       "Every line, month by month"),
        ],
        now=now,
    )  # fmt: skip
    metrics.add_metric(name="DeepDiveLines", unit=MetricUnit.Count, value=len(quarter.lines))
    if posted.missing:
        raise DigestIncomplete(f"the deep dive's {posted.missing}")
    return {
        "status": "posted" if posted.posted else "already-posted",
        "quarter": quarter.label,
        "months": [f"{m:%Y-%m}" for m in quarter.months],
        "total_usd": round(sum(quarter.totals), 2),
        "lines": len(quarter.lines),
        "anomalies": len(quarter.anomalies),
        "anomaly_source": quarter.anomaly_source,
        "region_moves": sum(1 for r in quarter.regions if r.saving_usd >= quarter.region_threshold_usd),
        "weeks_recorded": len(quarter.weeks),
        "files": posted.files,
        "errors": quarter.errors,
    }


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
