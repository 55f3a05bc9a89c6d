"""The quarterly deep dive into EC2 spend, for the review meeting. Pure: figures in, a report out.

The guide costguard is built from: "schedule a deep dive into your EC2 expense every 3-6 months ...
break down your expenses by accounts, regions, EC2 instance types". Three full months of EC2 compute
spend from Cost Explorer, month by month, by account, region, instance type, owner and team; the
fastest-growing lines; anomalies (AWS Cost Anomaly Detection's when it is on, else month-over-month
jumps); costguard's own quarter from its weekly records; commitment use; what each accelerated type
costs in the cheapest regions. A CSV of every line goes with it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from costguard.core.formatting import usd
from costguard.digest.chart import BLUE, DOLLARS, GREY, Series, bar_chart, month_label
from costguard.digest.commitments import CommitmentUse
from costguard.digest.handoff import AccountWeek
from costguard.slack.blocks import (
    DAY,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    divider,
    fields_section,
    header,
    mrkdwn,
    on_day,
    section,
    when,
)

DIMENSIONS = ("account", "region", "instance type", "owner", "team")


@dataclass(frozen=True)
class Line:
    """One line of spend (an account, a region, a type, an owner, a team), USD a month, oldest first."""

    dimension: str
    name: str
    months: tuple[float, ...]

    @property
    def total(self) -> float:
        return sum(self.months)

    @property
    def change(self) -> float:
        return self.months[-1] - self.months[0] if self.months else 0.0

    @property
    def change_percent(self) -> float | None:
        return self.change / self.months[0] * 100 if self.months and self.months[0] else None


@dataclass(frozen=True)
class Anomaly:
    start: date
    impact_usd: float
    where: str  # what it concerns: a service, a region, an account, a line
    source: str  # "Cost Anomaly Detection" or "month over month"
    detail: str = ""


@dataclass(frozen=True)
class RegionPrice:
    """An accelerated type run in a governed region, against the cheapest regions that offer it."""

    instance_type: str
    region: str
    usd_per_hour: float
    cheapest: tuple[tuple[str, float], ...]  # (region, USD an hour), cheapest first
    spend_usd: float  # the quarter's spend on the type in the region

    @property
    def saving_usd(self) -> float:
        """What the quarter's hours would have cost less in the cheapest region."""
        if not self.cheapest or self.cheapest[0][1] >= self.usd_per_hour:
            return 0.0
        return self.spend_usd * (1 - self.cheapest[0][1] / self.usd_per_hour)


@dataclass
class Quarter:
    label: str
    months: tuple[date, ...]  # the first day of each month
    lines: list[Line]
    accelerated: tuple[float, ...] = ()  # spend on accelerated instance types, a month
    anomalies: list[Anomaly] = field(default_factory=list)
    anomaly_source: str = "month over month"
    weeks: list[AccountWeek] = field(default_factory=list)  # costguard's weekly records in the quarter
    commitments: CommitmentUse = field(default_factory=CommitmentUse)
    regions: list[RegionPrice] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    region_threshold_usd: float = 100.0

    def of(self, dimension: str) -> list[Line]:
        return sorted((x for x in self.lines if x.dimension == dimension), key=lambda x: (-x.total, x.name))

    @property
    def totals(self) -> tuple[float, ...]:
        """EC2 compute a month: the sum over the instance types (every dimension adds up to the same)."""
        lines = self.of("instance type")
        return tuple(sum(x.months[m] for x in lines) for m in range(len(self.months)))


def quarter_bounds(today: date) -> tuple[date, date, str]:
    """The three full months before `today`'s month: (first day, first day after, label)."""
    first = date(today.year, today.month, 1)
    year, month = first.year, first.month - 3
    if month < 1:
        year, month = year - 1, month + 12
    start = date(year, month, 1)
    if month in (1, 4, 7, 10):
        label = f"{year} Q{(month - 1) // 3 + 1}"
    else:
        label = f"{start:%b %Y} to {_month_before(first):%b %Y}"
    return start, first, label


def _month_before(first: date) -> date:
    return date(first.year - 1, 12, 1) if first.month == 1 else date(first.year, first.month - 1, 1)


def month_starts(start: date, end: date) -> tuple[date, ...]:
    out, day = [], start
    while day < end:
        out.append(day)
        day = date(day.year + 1, 1, 1) if day.month == 12 else date(day.year, day.month + 1, 1)
    return tuple(out)


def jumps(lines: Sequence[Line], months: Sequence[date], *, percent: float, at_least_usd: float) -> list[Anomaly]:
    """Month-over-month increases of more than `percent` and at least `at_least_usd`, largest first."""
    out = []
    for line in lines:
        for index in range(1, len(line.months)):
            before, after = line.months[index - 1], line.months[index]
            rise = after - before
            if rise >= at_least_usd and (before == 0 or rise / before * 100 > percent):
                grew = f"+{rise / before * 100:.0f}%" if before else "new"
                detail = f"more, {usd(before)} to {usd(after)} ({grew})"
                where = f"{line.dimension} {line.name}"
                out.append(Anomaly(months[index], rise, where, "month over month", detail))
    return sorted(out, key=lambda a: (-a.impact_usd, a.where))


def fastest_growing(lines: Sequence[Line], limit: int = 5) -> list[Line]:
    return sorted((x for x in lines if x.change > 0), key=lambda x: (-x.change, x.dimension, x.name))[:limit]


def csv_text(quarter: Quarter) -> str:
    """Every line, month by month, for the meeting's spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["dimension", "line", *(f"{m:%Y-%m}" for m in quarter.months), "total", "change", "change %"])
    for dimension in DIMENSIONS:
        for line in quarter.of(dimension):
            pct = line.change_percent
            writer.writerow(
                [
                    dimension,
                    _cell(line.name),
                    *(f"{v:.2f}" for v in line.months),
                    f"{line.total:.2f}",
                    f"{line.change:.2f}",
                    "" if pct is None else f"{pct:.1f}",
                ]
            )
    return out.getvalue()


def _cell(text: str) -> str:
    """A spreadsheet reads a cell starting with = + - @ as a formula: a tag value must not run as one."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def chart_bars(quarter: Quarter) -> list[tuple[str, float, float]]:
    """Per month: spend on accelerated types, and the rest of EC2 compute."""
    totals = quarter.totals
    accelerated = quarter.accelerated or tuple(0.0 for _ in totals)
    return [(month_label(m), a, max(0.0, t - a)) for m, t, a in zip(quarter.months, totals, accelerated, strict=True)]


def chart_png(quarter: Quarter) -> bytes:
    """EC2 compute a month: accelerated types and the rest."""
    return bar_chart(
        chart_bars(quarter),
        title=f"EC2 compute cost a month, {quarter.label}",
        series=(Series("Accelerated types", BLUE), Series("Other EC2", GREY)),
        unit=DOLLARS,
        source="Source: Cost Explorer, EC2 compute cost by month and instance type; accelerated: the governed types.",
    )


def _months(line: Line) -> str:
    return " → ".join(usd(v) for v in line.months)


def _row(line: Line) -> Mrkdwn:
    pct = line.change_percent
    change = f" ({'+' if line.change >= 0 else '−'}{abs(pct):.0f}%)" if pct is not None else ""
    return mrkdwn("*{0}*: ", line.name or "(none)") + f"{_months(line)}{change}"


def quarter_message(quarter: Quarter, generated: datetime) -> Message:
    totals = quarter.totals
    total = sum(totals)
    gpu = sum(quarter.accelerated)
    first, last = (totals[0], totals[-1]) if totals else (0.0, 0.0)
    trend = f"{'+' if last >= first else '−'}{abs(last - first) / first * 100:.0f}%" if first else "new"
    blocks = [
        header(f"EC2 deep dive: {quarter.label}"),
        fields_section([f"*{m:%B %Y}*\n{usd(t)}" for m, t in zip(quarter.months, totals, strict=True)]),
        section(
            f"EC2 compute cost *{usd(total)}* over the quarter, month by month "
            f"{' → '.join(usd(t) for t in totals)} ({trend} first to last month); accelerated instances "
            f"*{usd(gpu)}* ({gpu / total * 100 if total else 0:.0f}%)."
        ),
    ]
    for dimension in DIMENSIONS:
        lines = quarter.of(dimension)
        if lines:
            blocks.append(section(Mrkdwn(f"*By {dimension}*\n") + bullet_list([_row(x) for x in lines[:5]])))
    growing = fastest_growing(quarter.lines)
    if growing:
        rows = [mrkdwn("{0} ", x.dimension) + _row(x) for x in growing]
        blocks += [divider(), section(Mrkdwn("*Growing fastest*\n") + bullet_list(rows))]
    blocks.append(section(_anomalies(quarter)))
    blocks += [divider(), section(_costguard_quarter(quarter)), section(_commitments(quarter.commitments))]
    moves = [r for r in quarter.regions if r.saving_usd >= quarter.region_threshold_usd]
    if quarter.regions:
        blocks.append(section(_regions(quarter.regions, moves, quarter.region_threshold_usd)))
    notes = [Mrkdwn("Every line month by month in the attached CSV. Generated ") + when(generated, style=DAY) + "."]
    if quarter.errors:
        notes.append(mrkdwn("Not available: {0}", "; ".join(quarter.errors)))
    blocks.append(context(*notes))
    return Message(f"EC2 deep dive {quarter.label}: {usd(total)} of EC2 compute", tuple(blocks))


def _anomalies(quarter: Quarter) -> Mrkdwn:
    title = Mrkdwn(f"*Anomalies* ({quarter.anomaly_source})\n")
    if not quarter.anomalies:
        return title + "None found."
    rows = [
        mrkdwn("{0}, {1}: ", _began(a), a.where) + mrkdwn("{0} {1}", usd(a.impact_usd), a.detail)
        for a in quarter.anomalies[:5]
    ]
    return title + bullet_list(rows)


def _began(anomaly: Anomaly) -> str | Mrkdwn:
    """When an anomaly began: a month's rise is its month ("Oct 2026"), not a moment; Cost Anomaly Detection's,
    its day (UTC), as each reader's."""
    return f"{anomaly.start:%b %Y}" if anomaly.source == "month over month" else on_day(anomaly.start)


def _costguard_quarter(quarter: Quarter) -> Mrkdwn:
    weeks = quarter.weeks
    if not weeks:
        return Mrkdwn("*costguard's quarter*: no weekly records in this quarter (they start with its first digest).")
    idle = sum(w.idle_gpu_hours for w in weeks)
    waste = sum(w.waste_usd for w in weeks)
    stopped = sum(w.stopped for w in weeks)
    saved = sum(w.saved_usd for w in weeks)
    paid = sum(w.paid_idle_hours for w in weeks)
    committed = f" {paid:,.0f} idle machine-hours were on capacity already paid: buy less at renewal." if paid else ""
    return Mrkdwn(
        f"*costguard's quarter* ({len(weeks)} weekly record{'s' if len(weeks) != 1 else ''}): {idle:,.0f} idle "
        f"GPU-hours ({usd(waste)} that stops would have saved, as each week's digest priced it); {stopped} idle "
        f"machine{'s' if stopped != 1 else ''} stopped, saving {usd(saved)}.{committed}"
    )


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"


def _commitments(c: CommitmentUse) -> Mrkdwn:
    return Mrkdwn(
        f"*Commitments over the quarter*: Reserved Instances {_pct(c.ri_utilization)} used, {_pct(c.ri_coverage)} "
        f"of eligible hours covered; Savings Plans {_pct(c.sp_utilization)} used, {_pct(c.sp_coverage)} of eligible "
        "spend covered."
    )


def _regions(prices: Sequence[RegionPrice], moves: Sequence[RegionPrice], threshold: float) -> Mrkdwn:
    rows = []
    for r in sorted(prices, key=lambda r: -r.saving_usd)[:8]:
        cheapest = ", ".join(f"{region} {usd(p)}" for region, p in r.cheapest[:3])
        rows.append(
            mrkdwn("*{0}* in {1}: ", r.instance_type, r.region)
            + mrkdwn("{0}/h; cheapest: {1}", usd(r.usd_per_hour), cheapest)
            + (f"; *{usd(r.saving_usd)} less* this quarter there" if r in moves else "")
        )
    lead = Mrkdwn(
        f"*Region prices* (on demand, Linux): {len(moves)} move{'s' if len(moves) != 1 else ''} would have saved "
        f"more than {usd(threshold)} this quarter; data, quotas and capacity decide whether one is worth it.\n"
    )
    return lead + bullet_list(rows)
