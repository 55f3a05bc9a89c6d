"""The weekly digest: read the fortnight, compute the week and the week before, tell the channel and
each owner, draw the chart, keep the team dashboards current."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from costguard.aws import READ_ERRORS, error_code
from costguard.cloudwatch import GPU_METRIC, GPU_NAMESPACE, CloudWatchMetrics, MetricRef
from costguard.commitments import CommitmentReader
from costguard.digest import InstanceWeek, Week, hours_from_points, summarize
from costguard.ec2 import LIVE_STATES, Ec2
from costguard.idle import is_accelerated
from costguard.ledger import Action, Ledger
from costguard.observability import logger
from costguard.pricing import PriceBook
from costguard.records import Instance
from costguard.reservations import Commitment
from costguard.settings import IdlePolicy
from costguard.utilization import Signal

HOUR = 3600


@dataclass
class Region:
    name: str
    ec2: Ec2
    cloudwatch: CloudWatchMetrics
    dashboards: Any  # the region's CloudWatch client, for PutDashboard


@dataclass
class Commitments:
    ri_utilization: float | None = None
    ri_coverage: float | None = None
    sp_utilization: float | None = None
    sp_coverage: float | None = None
    expiring: list[Commitment] = field(default_factory=list)


@dataclass
class DigestData:
    start: datetime
    end: datetime
    instances: list[InstanceWeek]
    raw: dict[str, Instance]
    this_week: Week
    last_week: Week
    actions: list[Action]
    saved_hours: float
    saved_usd: float
    commitments: Commitments
    spend_this_week: float | None
    spend_last_week: float | None
    dashboards: dict[str, str]  # team -> console URL
    errors: list[str]
    owner_tag_key: str

    @property
    def no_owner(self) -> list[Instance]:
        return [i for i in self.raw.values() if not i.owner(self.owner_tag_key)]

    def count(self, *kinds: str) -> int:
        return sum(1 for a in self.actions if a.kind in kinds and a.applied)


@dataclass
class DigestCollector:
    regions: Sequence[Region]
    prices: PriceBook
    ledger: Ledger
    reader: CommitmentReader
    ce: Any
    policy: IdlePolicy
    owner_tag_key: str
    team_tag_key: str

    def collect(self, now: datetime) -> DigestData:
        # The seven full days before today, and today so far; compared with the seven days before them.
        end = now
        start = (now - timedelta(days=7)).replace(hour=0, minute=0, second=0, microsecond=0)
        earlier = start - timedelta(days=7)
        errors: list[str] = []
        weeks: list[InstanceWeek] = []
        raw: dict[str, Instance] = {}
        for region in self.regions:
            instances = [
                i
                for i in region.ec2.iter_instances([{"Name": "instance-state-name", "Values": list(LIVE_STATES)}])
                if is_accelerated(i.instance_type, self.policy)
            ]
            raw.update({i.instance_id: i for i in instances})
            weeks += self._hours(region, instances, earlier, end)
        this_week = summarize(weeks, start, end, self.policy)
        last_week = summarize(weeks, earlier, start, self.policy)
        actions = list(self.ledger.actions_between(start, end))
        saved_hours, saved_usd = _saved(actions, raw, end, self.prices)
        commitments = self._commitments(start, end, now, errors)
        spend_this, spend_last = self._spend(earlier, start, end, errors)
        errors += self.reader.errors
        dashboards = self._dashboards(weeks)
        return DigestData(
            start,
            end,
            weeks,
            raw,
            this_week,
            last_week,
            actions,
            saved_hours,
            saved_usd,
            commitments,
            spend_this,
            spend_last,
            dashboards,
            errors,
            self.owner_tag_key,
        )

    def _hours(
        self, region: Region, instances: Sequence[Instance], start: datetime, end: datetime
    ) -> list[InstanceWeek]:
        """Two weeks at one-hour resolution, with the same batched GetMetricData code as the sweep."""
        if not instances:
            return []
        gpu = region.cloudwatch.discover_gpu_series(instances, recently_active=False)
        refs: list[MetricRef] = []
        for instance in instances:
            iid = instance.instance_id
            refs.append(
                MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", (("InstanceId", iid),), "Maximum")
            )
            for dims in gpu.get(iid, []):
                for stat in ("Maximum", "Average"):
                    refs.append(MetricRef(iid, Signal.GPU, stat, GPU_NAMESPACE, GPU_METRIC, dims, stat))
        points, failed = region.cloudwatch.fetch(refs, start, end, period=HOUR)
        for ref in failed:
            logger.warning("digest series unreadable", instance_id=ref.instance_id, reason=failed[ref])
        by_instance: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {"cpu": [], "Maximum": [], "Average": []})
        for ref, series in points.items():
            slot = by_instance[ref.instance_id]
            if ref.signal is Signal.CPU:
                slot["cpu"] = series
            else:
                slot[ref.stat].append(series)
        out = []
        for instance in instances:
            slot = by_instance[instance.instance_id]
            count = len(gpu.get(instance.instance_id, [])) or 1
            out.append(
                InstanceWeek(
                    instance.instance_id,
                    instance.instance_type,
                    region.name,
                    instance.owner(self.owner_tag_key),
                    instance.tags.get(self.team_tag_key, ""),
                    count,
                    self.prices.hourly(instance.instance_type, region.name).usd_per_hour,
                    bool(gpu.get(instance.instance_id)),
                    instance.state,
                    hours_from_points(slot["cpu"], slot["Maximum"], slot["Average"]),
                )
            )
        return out

    def _commitments(self, start: datetime, end: datetime, now: datetime, errors: list[str]) -> Commitments:
        out = Commitments()
        period = {"Start": start.date().isoformat(), "End": end.date().isoformat()}
        calls: list[tuple[str, Callable[[], Any], Callable[[Any], Any], str]] = [
            (
                "GetReservationUtilization",
                lambda: self.ce.get_reservation_utilization(TimePeriod=period),
                lambda r: r["Total"]["UtilizationPercentage"],
                "ri_utilization",
            ),
            (
                "GetReservationCoverage",
                lambda: self.ce.get_reservation_coverage(TimePeriod=period),
                lambda r: r["Total"]["CoverageHours"]["CoverageHoursPercentage"],
                "ri_coverage",
            ),
            (
                "GetSavingsPlansUtilization",
                lambda: self.ce.get_savings_plans_utilization(TimePeriod=period),
                lambda r: r["Total"]["Utilization"]["UtilizationPercentage"],
                "sp_utilization",
            ),
            (
                "GetSavingsPlansCoverage",
                lambda: self.ce.get_savings_plans_coverage(TimePeriod=period),
                lambda r: r["SavingsPlansCoverages"][0]["Coverage"]["CoveragePercentage"],
                "sp_coverage",
            ),
        ]
        for name, call, pick, attribute in calls:
            try:
                setattr(out, attribute, float(pick(call())))
            except READ_ERRORS as exc:
                errors.append(f"{name}: {error_code(exc)}")
            except (KeyError, IndexError, TypeError, ValueError):
                setattr(out, attribute, None)  # no commitment of that kind: nothing to report
        soon = now + timedelta(days=30)
        try:
            listed = self.reader.commitments()
        except READ_ERRORS as exc:  # one section of the digest, not a reason to send none
            errors.append(f"listing Reserved Instances and Savings Plans: {error_code(exc)}")
            return out
        out.expiring = sorted((c for c in listed if now <= c.end <= soon), key=lambda c: c.end)
        return out

    def _spend(
        self, earlier: datetime, start: datetime, end: datetime, errors: list[str]
    ) -> tuple[float | None, float | None]:
        try:
            response = self.ce.get_cost_and_usage(
                TimePeriod={"Start": earlier.date().isoformat(), "End": end.date().isoformat()},
                Granularity="DAILY",
                Metrics=["UnblendedCost"],
            )
        except READ_ERRORS as exc:
            errors.append(f"GetCostAndUsage: {error_code(exc)}")
            return None, None
        this_week = last_week = 0.0
        for day in response.get("ResultsByTime", []):
            amount = float(day["Total"]["UnblendedCost"]["Amount"])
            if day["TimePeriod"]["Start"] >= start.date().isoformat():
                this_week += amount
            else:
                last_week += amount
        return this_week, last_week

    def _dashboards(self, weeks: Sequence[InstanceWeek]) -> dict[str, str]:
        """One CloudWatch dashboard per team tag (or one for the fleet), rewritten with its current machines."""
        teams: dict[str, list[InstanceWeek]] = defaultdict(list)
        for week in weeks:
            teams[week.team or "fleet"].append(week)
        links = {}
        for region in self.regions:
            for team, members in sorted(teams.items()):
                here = [m for m in members if m.region == region.name][:50]
                if not here:
                    continue
                name = f"costguard-{_slug(team)}-{region.name}"
                body = dashboard_body(here, region.name)
                try:
                    region.dashboards.put_dashboard(DashboardName=name, DashboardBody=json.dumps(body))
                except READ_ERRORS as exc:
                    logger.warning("dashboard not updated", dashboard=name, error=str(exc))
                    continue
                links[team] = (
                    f"https://{region.name}.console.aws.amazon.com/cloudwatch/home?region={region.name}#dashboards/dashboard/{name}"
                )
        return links


def dashboard_body(members: Sequence[InstanceWeek], region: str) -> dict[str, Any]:
    widgets = []
    for index, member in enumerate(members):
        search = (
            f'SEARCH(\'{{{GPU_NAMESPACE},InstanceId,index,name,arch}} MetricName="{GPU_METRIC}" '
            f"InstanceId=\"{member.instance_id}\"', 'Maximum', 300)"
        )
        widgets.append(
            {
                "type": "metric",
                "x": (index % 2) * 12,
                "y": (index // 2) * 6,
                "width": 12,
                "height": 6,
                "properties": {
                    "title": f"{member.instance_id} {member.instance_type} ({member.owner or 'no owner'})",
                    "region": region,
                    "stat": "Maximum",
                    "period": 300,
                    "yAxis": {"left": {"min": 0, "max": 100}},
                    "metrics": [
                        [{"expression": search, "id": "gpu", "label": "GPU"}],
                        ["AWS/EC2", "CPUUtilization", "InstanceId", member.instance_id, {"label": "CPU"}],
                    ],
                },
            }
        )
    return {"widgets": widgets}


def _saved(
    actions: Sequence[Action], raw: Mapping[str, Instance], end: datetime, prices: PriceBook
) -> tuple[float, float]:
    """Hours each stopped machine stayed stopped this week, and what that saved at its hourly price
    (the price the stop recorded; the price book's for stops pressed in Slack, which record none)."""
    hours = usd = 0.0
    for action in actions:
        if action.kind not in ("stop", "stop-from-slack") or not action.applied:
            continue
        instance = raw.get(action.instance_id)
        if instance is None:
            continue  # terminated since: nothing more to say about it
        if instance.state == "stopped":
            until = end
        elif instance.launch_time > action.at:
            until = instance.launch_time
        else:
            continue
        stopped = max(0.0, (until - action.at).total_seconds() / 3600)
        hours += stopped
        price = action.hourly_saving or prices.hourly(action.instance_type, action.region).usd_per_hour or 0.0
        usd += stopped * price
    return hours, usd


def _slug(team: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in team.lower())[:60] or "fleet"


@dataclass
class DigestReport:
    posted: bool
    chart_file: str = ""
    owners_told: list[str] = field(default_factory=list)
    owners_unreachable: list[str] = field(default_factory=list)
