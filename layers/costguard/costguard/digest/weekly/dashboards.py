"""One CloudWatch dashboard per team (or one for the fleet) per region, with its machines' GPU and CPU."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from costguard.aws.clients import READ_ERRORS
from costguard.aws.cloudwatch.series import GPU_METRIC, GPU_NAMESPACE
from costguard.core.observability import logger
from costguard.digest.weekly.rules.figures import InstanceWeek


def update_dashboards(regions: Mapping[str, Any], weeks: Sequence[InstanceWeek]) -> dict[str, str]:
    """One CloudWatch dashboard per team tag (or one for the fleet), rewritten with its current machines."""
    teams: dict[str, list[InstanceWeek]] = defaultdict(list)
    for week in weeks:
        teams[week.team or "fleet"].append(week)
    links = {}
    for region, client in regions.items():
        for team, members in sorted(teams.items()):
            here = [m for m in members if m.region == region][:50]
            if not here:
                continue
            name = f"costguard-{_slug(team)}-{region}"
            body = dashboard_body(here, region)
            try:
                client.put_dashboard(DashboardName=name, DashboardBody=json.dumps(body))
            except READ_ERRORS as exc:
                logger.warning("dashboard not updated", dashboard=name, error=str(exc))
                continue
            links[team] = (
                f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#dashboards/dashboard/{name}"
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


def _slug(team: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in team.lower())[:60] or "fleet"
