"""The AWS stand-in for the deep dive and the organization digest: the weekly digest's (testing/aws/digest.py,
with no machines) and Cost Explorer month by month, Cost Anomaly Detection, the Pricing API across
regions and the hub's figures queue (SQS), in AWS's wire formats.

Cost Explorer does not document how many groups one GetCostAndUsage page holds: this answers 1,000
(a month's group each) a page, and the floor is counted in the same pages. GetAnomalies: 100 a page.
The figures queue is testing/aws/sqs.py (an empty queue's receive waits its WaitTimeSeconds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from testing.aws.costexplorer import CostExplorer, Period, json_targets
from testing.aws.digest import DigestBill, DigestStandIn
from testing.aws.errors import unsupported
from testing.aws.pricing import Pricing
from testing.worlds.digest import DigestWorld
from testing.worlds.scheduled import HUB, REGIONS, OrganizationWorld, QuarterWorld

ANOMALY_PAGE = 100


class ScheduledStandIn(DigestStandIn):
    def __init__(
        self,
        *,
        quarter: QuarterWorld | None = None,
        organization: OrganizationWorld | None = None,
        latency_s: float = 0.0,
        secret: dict[str, str] | None = None,
    ) -> None:
        super().__init__(DigestWorld(0), latency_s=latency_s, secret=secret)
        self.quarter, self.organization = quarter, organization
        self.pricing = Pricing(QuarterPrices(quarter) if quarter is not None else None)
        self.costexplorer = CostExplorer(QuarterBill(quarter))
        self.priced = self.pricing.asked
        self.digest_machines.reserved = []  # the payer's Reserved Instances are not the deep dive's question
        self.deleted = self.sqs.deleted  # the hub's figures queue: testing/aws/sqs.py
        self._json.update(
            {
                **json_targets(self.costexplorer),
                "AWSPriceListService.GetProducts": self.pricing.get_products,
                "AmazonSQS.ReceiveMessage": self.sqs.receive_message,
                "AmazonSQS.DeleteMessage": self.sqs.delete_message,
                "AmazonSQS.DeleteMessageBatch": self.sqs.delete_message_batch,
            }
        )
        if quarter is not None:
            for sort_key, body in quarter.week_bodies():
                item = {"pk": {"S": f"week#{HUB}"}, "sk": {"S": sort_key}, "body": {"S": body}}
                self.dynamodb.load("costguard-state", [item])
        if organization is not None:
            for body in organization.hand_offs():
                self.sqs.put(body)


class QuarterPrices:
    """The quarter's on-demand prices for testing/aws/pricing.py: its accelerated types in every region (to
    the Pricing API's four decimals)."""

    def __init__(self, quarter: QuarterWorld) -> None:
        self.quarter = quarter

    def ec2(self, instance_type: str) -> dict[str, float]:
        if instance_type not in self.quarter.types:
            return {}
        return {region: round(self.quarter.price(instance_type, region), 4) for region in REGIONS}

    def sagemaker(self, instance_name: str, region: str) -> dict[str, float]:
        return {}


class QuarterBill(DigestBill):
    """The payer's quarter for testing/aws/costexplorer.py: EC2 cost month by month from August to October,
    grouped as the deep dive asks (to four decimals), and Cost Anomaly Detection's findings (100 a page);
    otherwise the digest account's bill."""

    def __init__(self, quarter: QuarterWorld | None) -> None:
        self.quarter = quarter

    def cost_and_usage(
        self,
        start: str,
        end: str,
        granularity: str,
        group_by: tuple[tuple[str, str], ...],
        scope: Mapping[str, Any] | None,
    ) -> list[Period]:
        if self.quarter is None or granularity != "MONTHLY":
            return super().cost_and_usage(start, end, granularity, group_by, scope)
        months = self.quarter.months
        if (start, end) != (months[0].isoformat(), "2026-11-01"):
            raise unsupported(f"the quarter's world is August to October, not {start} to {end}")
        keys = tuple(key if kind == "DIMENSION" else f"TAG:{key}" for kind, key in group_by)
        rows = self.quarter.rows(keys)
        ends = (*months[1:], date(2026, 11, 1))
        return [
            Period(months[m].isoformat(), ends[m].isoformat(), groups=[(name, round(a[m], 4)) for name, a in rows])
            for m in range(len(months))
        ]

    def reports(self) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        return {**super().reports(), "GetAnomalyMonitors": self._monitors, "GetAnomalies": self._anomalies}

    def _monitors(self, _: Mapping[str, Any]) -> dict[str, Any]:
        monitor = {"MonitorArn": "arn:aws:ce::123456789012:anomalymonitor/bench", "MonitorName": "services",
                   "MonitorType": "DIMENSIONAL", "MonitorDimension": "SERVICE"}  # fmt: skip
        return {"AnomalyMonitors": [monitor] if self.quarter and self.quarter.anomalies else []}

    def _anomalies(self, body: Mapping[str, Any]) -> dict[str, Any]:
        assert self.quarter is not None
        found = [
            {
                "AnomalyId": f"anomaly-{k}",
                "AnomalyStartDate": f"2026-{8 + k % 3:02d}-{1 + k % 28:02d}",
                "DimensionValue": "Amazon Elastic Compute Cloud - Compute",
                "RootCauses": [
                    {
                        "Service": "Amazon Elastic Compute Cloud - Compute",
                        "Region": REGIONS[k % len(REGIONS)],
                        "LinkedAccount": f"{100000000000 + k:012d}",
                        "UsageType": "BoxUsage:p4d.24xlarge",
                    }
                ],
                "AnomalyScore": {"MaxScore": 0.9, "CurrentScore": 0.5},
                "Impact": {"MaxImpact": 100.0 + k, "TotalImpact": 1000.0 + k * 37},
                "MonitorArn": "arn:aws:ce::123456789012:anomalymonitor/bench",
            }
            for k in range(self.quarter.anomalies)
        ]
        start = int(body.get("NextPageToken") or 0)
        answer: dict[str, Any] = {"Anomalies": found[start : start + ANOMALY_PAGE]}
        if start + ANOMALY_PAGE < len(found):
            answer["NextPageToken"] = str(start + ANOMALY_PAGE)
        return answer
