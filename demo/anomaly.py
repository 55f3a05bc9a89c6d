"""The demo's Cost Anomaly Detection scene: AWS finds the fleet's EC2 spend jumping over the last three
days (two p5.48xlarge boxes started three days ago), sends the anomaly by EventBridge and by SNS (one
message) in the night, then again in the morning with a bigger impact, as the last day's billing data
arrives (the message is edited in place, not posted again).

The anomaly is events/budget_alerts/*anomaly*.json moved to the demo's dates. Cost Explorer's answer
for who drives it (spend by Owner tag over the anomaly's days and the three days before) is served by
the demo's gap proxy, and put back as it was afterwards.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from testing.aws_gaps import AwsGaps
from testing.handlers import load_event

# The three days of the anomaly, and the three before, by owner (USD): carol's and henry's p5.48xlarge
# ($55.04 an hour) ran all three days; alice's p4d.24xlarge ran as before.
DURING = {"Owner$carol@example.com": 3962.9, "Owner$henry@example.com": 3302.4, "Owner$alice": 1581.1, "Owner$": 212.0}
BEFORE = {"Owner$carol@example.com": 0.0, "Owner$henry@example.com": 0.0, "Owner$alice": 1575.4, "Owner$": 208.3}
EXPECTED = 1790.0  # what Cost Anomaly Detection expected EC2 to cost over the three days
CAUSES = [("us-east-1", "BoxUsage:p5.48xlarge", 0.93), ("us-east-1", "BoxUsage:p4d.24xlarge", 0.07)]  # share
# The impact AWS reports in the night, and in the morning once the last day is billed in full.
NIGHT, MORNING = 4391.2, 7268.4

Invoke = Callable[[str, Any, str], Any]


def scene(gaps: AwsGaps, invoke: Invoke, now: datetime) -> list[tuple[str, str]]:
    """Runs the scene; each delivery and what costguard did with it (posted, unchanged, updated)."""
    start, end = now.date() - timedelta(days=3), now.date() - timedelta(days=1)
    keys = [("Owner", start.isoformat()), ("Owner", (start - timedelta(days=3)).isoformat())]
    kept = {key: gaps.costs.get(key) for key in keys}
    gaps.costs[keys[0]], gaps.costs[keys[1]] = DURING, BEFORE
    lines = []
    try:
        dated = {"anomalyStartDate": f"{start}T00:00:00Z", "anomalyEndDate": f"{end}T00:00:00Z"}
        night, morning = ({**dated, **_impact(total)} for total in (NIGHT, MORNING))
        for label, payload in (
            ("EventBridge 'Anomaly Detected', in the night", _by_eventbridge(night, now - timedelta(hours=7))),
            ("SNS, the same copy, in the night", _by_sns(night, now - timedelta(hours=7), "night")),
            ("SNS, sent again this morning, bigger", _by_sns(morning, now - timedelta(minutes=10), "morning")),
        ):
            [result] = invoke("budget_alerts", payload, label)["notifications"]
            lines.append((label, str(result["status"])))
        _found(gaps, night, morning)
    finally:
        for key, value in kept.items():
            if value is None:
                gaps.costs.pop(key, None)
            else:
                gaps.costs[key] = value
    return lines


def _impact(total: float) -> dict[str, Any]:
    """The impact fields and root causes of an anomaly of `total` USD over the expected spend."""
    causes = [
        {
            "service": "Amazon Elastic Compute Cloud - Compute",
            "region": region,
            "linkedAccount": "123456789012",
            "linkedAccountName": "research",
            "usageType": usage,
            "impact": {"contribution": round(total * share, 2)},  # EventBridge's; SNS leaves it out
        }
        for region, usage, share in CAUSES
    ]
    impact = {
        "maxImpact": round(total / 2.2, 2),
        "totalExpectedSpend": EXPECTED,
        "totalActualSpend": EXPECTED + total,
        "totalImpact": total,
        "totalImpactPercentage": round(total / EXPECTED * 100, 2),
    }
    return {"impact": impact, "rootCauses": causes, "accountName": "research"}


def _by_eventbridge(changes: dict[str, Any], sent: datetime) -> dict[str, Any]:
    event = copy.deepcopy(load_event("budget_alerts/eventbridge-anomaly.json"))
    event["detail"].update(changes)
    event["time"] = f"{sent:%Y-%m-%dT%H:%M:%S}Z"
    return dict(event)


def _by_sns(changes: dict[str, Any], sent: datetime, label: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event("budget_alerts/sns-anomaly.json"))
    sns = event["Records"][0]["Sns"]
    body = {**json.loads(sns["Message"]), **changes}
    body["rootCauses"] = [{k: v for k, v in c.items() if k != "impact"} for c in body["rootCauses"]]
    sns.update(Message=json.dumps(body), Timestamp=f"{sent:%Y-%m-%dT%H:%M:%S}.000Z", MessageId=f"demo-anomaly-{label}")
    return dict(event)


def _found(gaps: AwsGaps, night: dict[str, Any], morning: dict[str, Any]) -> None:
    """Cost Anomaly Detection is on from now on for whoever asks AWS (the deep dive): its monitor, and the
    anomaly it just sent, as GetAnomalyMonitors and GetAnomalies answer."""
    detail = load_event("budget_alerts/eventbridge-anomaly.json")["detail"]
    monitor = {
        "MonitorArn": detail["monitorArn"],
        "MonitorName": detail["monitorName"],
        "MonitorType": "DIMENSIONAL",
        "MonitorDimension": "SERVICE",
    }
    gaps.anomaly_monitors[:] = [monitor]
    gaps.anomalies.append(
        {
            "AnomalyId": detail["anomalyId"],
            "AnomalyStartDate": night["anomalyStartDate"][:10],
            "AnomalyEndDate": night["anomalyEndDate"][:10],
            "DimensionValue": detail["dimensionValue"],
            "RootCauses": [
                {
                    "Service": c["service"],
                    "Region": c["region"],
                    "LinkedAccount": c["linkedAccount"],
                    "UsageType": c["usageType"],
                }
                for c in morning["rootCauses"]
            ],
            "AnomalyScore": {"MaxScore": 0.81, "CurrentScore": 0.78},
            "Impact": {"MaxImpact": morning["impact"]["maxImpact"], "TotalImpact": morning["impact"]["totalImpact"]},
            "MonitorArn": detail["monitorArn"],
        }
    )
