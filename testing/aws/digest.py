"""A fast stand-in for every AWS call of the weekly digest, on 127.0.0.1, answering from a `DigestWorld`.

It is the sweep's stand-in (testing/aws/server.py: the server, the wire formats, the call counts, the
latency, costguard's DynamoDB items, Secrets Manager) with the digest's reads added, in AWS's formats
and limits: DescribeInstances (pages of 5-1,000), DescribeSpotPriceHistory, DescribeReservedInstances,
ListMetrics (500 a page), GetMetricData (500 queries and 100,800 points a call, exact dimension sets,
hourly Maximum and Average), PutDashboard, SSM DescribeInstanceInformation (5-50 a page, at most 100
ids a filter, running instances only), Cost Explorer's commitments and daily cost, Savings Plans
(REST-JSON), DynamoDB BatchGetItem (100 keys), SQS SendMessage, and SageMaker's lists (empty: the fleet
is EC2's). EC2, Savings Plans and SQS are testing/aws's ec2.py, savingsplans.py and sqs.py over the
world's machines, commitments and queue. The metrics come from the world's
hourly functions, computed once per distinct series shape, so serving 10,000 machines costs the
stand-in little of the machine the benchmark shares with the measured process.
"""

from __future__ import annotations

import json
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

from testing.aws.cloudwatch import CloudWatch, Listed, Points, SeriesKey
from testing.aws.costexplorer import CostExplorer, Period, json_targets, plan_use
from testing.aws.ec2 import Ec2, Ec2Instance, Ec2World
from testing.aws.errors import ApiError, unsupported
from testing.aws.savingsplans import SavingsPlans
from testing.aws.server import StandIn
from testing.aws.sqs import Sqs
from testing.aws.ssm import SystemsManager
from testing.worlds.digest import ACCOUNT, CORE_METRIC, GPU_METRIC, DigestWorld, Machine
from testing.worlds.fleet import Fleet

# Bundled prices the digest falls back to (the Pricing stand-in answers nothing): Spot is priced from them.
ON_DEMAND = {"g5.xlarge": 1.006, "g6.xlarge": 0.8048, "g5.12xlarge": 5.672, "p4d.24xlarge": 21.96,
             "g5.2xlarge": 1.212, "g4dn.xlarge": 0.526}  # fmt: skip
PREFIXES = {
    "GraniteServiceVersion20100801": "cloudwatch",
    "DynamoDB_20120810": "dynamodb",
    "secretsmanager": "secretsmanager",
    "AWSPriceListService": "pricing",
    "AmazonSSM": "ssm",
    "AWSInsightsIndexService": "ce",
    "AmazonSQS": "sqs",
    "SageMaker": "sagemaker",
}


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class DigestStandIn(StandIn):
    def __init__(self, world: DigestWorld, *, latency_s: float = 0.0, secret: Mapping[str, str] | None = None) -> None:
        super().__init__(Fleet(0), latency_s=latency_s, secret=secret)
        self.world = world
        self.cloudwatch = CloudWatch(DigestMetrics(world))
        self.ssm = SystemsManager(DigestNodes(world))
        self.costexplorer = CostExplorer(DigestBill())
        self.dashboards = self.cloudwatch.dashboards
        self.digest_machines = DigestMachines(world)
        self.ec2 = Ec2(self.digest_machines)
        self.savingsplans = SavingsPlans(self.digest_machines.savings_plans)
        self.sqs = Sqs()
        self.sent = self.sqs.sent  # SQS message bodies, in order
        self.priced = self.pricing.asked  # instance types asked of the Pricing API (which answers nothing)
        self.spot_asked = self.digest_machines.spot_asked  # instance types asked of DescribeSpotPriceHistory
        self._json.update(
            {
                "GraniteServiceVersion20100801.ListMetrics": self.cloudwatch.list_metrics,
                "GraniteServiceVersion20100801.GetMetricData": self.cloudwatch.get_metric_data,
                "GraniteServiceVersion20100801.PutDashboard": self.cloudwatch.put_dashboard,
                "AmazonSSM.DescribeInstanceInformation": self.ssm.describe_instance_information,
                "AmazonSSM.GetServiceSetting": self.ssm.get_service_setting,
                **json_targets(self.costexplorer),
                "AmazonSQS.SendMessage": self.sqs.send_message,
                # The digest's SageMaker part (SageMakerGovernance is on by default): an account without any.
                "SageMaker.ListNotebookInstances": lambda _: {"NotebookInstances": []},
                "SageMaker.ListEndpoints": lambda _: {"Endpoints": []},
                "SageMaker.ListDomains": lambda _: {"Domains": []},
                "SageMaker.ListApps": lambda _: {"Apps": []},
            }
        )  # fmt: skip
        self.dynamodb.load("costguard-state", list(world.ledger_items()))

    @staticmethod
    def _service(target: str | None, operation: str) -> str:
        if target:
            prefix = target.split(".", 1)[0]
            return PREFIXES.get(prefix, prefix)
        if operation == "DescribeSavingsPlans":
            return "savingsplans"
        return "sts" if operation == "GetCallerIdentity" else "ec2"

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.path.startswith("/DescribeSavingsPlans"):
            self._savings_plans(request)
            return
        super()._handle(request)

    def _savings_plans(self, request: BaseHTTPRequestHandler) -> None:
        """Savings Plans' REST-JSON: testing/aws/savingsplans.py."""
        raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        with self._lock:
            self.calls["savingsplans:DescribeSavingsPlans"] += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        headers = {"Content-Type": "application/json"}
        try:
            body, status = json.dumps(self.savingsplans.describe_savings_plans(json.loads(raw or b"{}"))).encode(), 200
        except ApiError as exc:
            body, status = json.dumps({"message": exc.message}).encode(), exc.status
            headers["x-amzn-ErrorType"] = exc.code
        request.send_response(status)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


SAVINGS_PLAN_ARN = "arn:aws:savingsplans::123456789012:savingsplan/sp-0bench"


class DigestMachines(Ec2World):
    """The digest world's machines for testing/aws/ec2.py (as they stand: the digest stops nothing), its
    Reserved Instance (4 g5.12xlarge, ending in 20 days) and Spot prices from the bundled on-demand prices
    (zone d a cent dearer); each instance type asked of DescribeSpotPriceHistory is counted."""

    def __init__(self, world: DigestWorld) -> None:
        self.world = world
        self.spot_asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        now = world.now
        self.reserved: list[dict[str, Any]] = [
            {
                "ReservedInstancesId": "ri-0bench0000000001",
                "InstanceType": "g5.12xlarge",
                "Start": now - timedelta(days=345),
                "End": now + timedelta(days=20),
                "Duration": 31536000,
                "InstanceCount": 4,
                "ProductDescription": "Linux/UNIX",
                "State": "active",
                "OfferingClass": "standard",
                "OfferingType": "No Upfront",
                "Scope": "Region",
            }
        ]

    def instances(self) -> list[Ec2Instance]:
        return [self._machine(m) for m in self.world.machines]

    def _machine(self, m: Machine) -> Ec2Instance:
        return Ec2Instance(
            m.instance_id,
            m.instance_type,
            m.state,
            self.world.launch_time(m),
            m.tags,
            lifecycle="spot" if m.spot else "",
            spot_request_id=f"sir-{m.index:08x}" if m.spot else None,
            hibernation_configured=False,
            zone=m.zone,
            private_dns_name=f"ip-10-{m.index // 65536}-{m.index // 256 % 256}-{m.index % 256}.ec2.internal",
            platform="Linux/UNIX",
            cpu=(2, 2),
            volume_id=f"vol-{m.index:017x}",
            reservation_id=f"r-{m.index:017x}",
            owner_id=ACCOUNT,
            image_id="ami-0bench",
            extra={"Architecture": "x86_64", "Monitoring": {"State": "disabled"}},
        )

    def reserved_instances(self) -> list[dict[str, Any]]:
        return self.reserved

    def spot_prices(self, instance_types: Sequence[str]) -> Iterator[tuple[str, str, float]]:
        with self._lock:
            self.spot_asked.update(instance_types)
        for instance_type in instance_types:
            on_demand = ON_DEMAND.get(instance_type)
            if on_demand is None:
                continue
            for zone in ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"):
                yield instance_type, zone, self.world.spot_price(on_demand) + (0.01 if zone.endswith("d") else 0.0)

    def now(self) -> datetime:
        return self.world.now

    def savings_plans(self) -> list[dict[str, Any]]:
        """The account's one Compute Savings Plan (40 USD/h, ending in 95 days)."""
        now = self.world.now
        return [
            {
                "savingsPlanId": "sp-0bench",
                "savingsPlanArn": SAVINGS_PLAN_ARN,
                "start": _iso(now - timedelta(days=1000)),
                "end": _iso(now + timedelta(days=95)),
                "state": "active",
                "region": "",
                "ec2InstanceFamily": "",
                "savingsPlanType": "Compute",
                "paymentOption": "No Upfront",
                "commitment": "40.0",
            }
        ]


class DigestMetrics:
    """The digest world's series for testing/aws/cloudwatch.py: CPUUtilization (AWS/EC2, InstanceId) of every
    machine, the busiest core (CWAgent cpu_usage_active, InstanceId) of each that runs the agent, and the
    GPU series its agent publishes (testing/worlds/digest.py's dimension sets, listed in
    the world's order); hourly points, computed once per distinct series shape, so serving 10,000
    machines costs the stand-in little of the machine the benchmark shares with the measured process."""

    def __init__(self, world: DigestWorld) -> None:
        self.world = world
        self._values: dict[tuple[Any, ...], tuple[list[int], list[float]]] = {}
        self._metrics: dict[SeriesKey, tuple[Machine, str, int | None]] = {}
        for machine in world.machines:
            iid = machine.instance_id
            self._metrics[("AWS/EC2", "CPUUtilization", frozenset({("InstanceId", iid)}))] = (machine, "cpu", None)
            if machine.telemetry:
                self._metrics[("CWAgent", CORE_METRIC, frozenset({("InstanceId", iid)}))] = (machine, "core", None)
            for dims, gpu in world.series(machine):
                self._metrics[("CWAgent", GPU_METRIC, frozenset(dims))] = (machine, "gpu", gpu)

    def listed(self, recently_active: bool) -> Iterator[Listed]:
        for machine in self.world.machines:
            for dims, _ in self.world.series(machine):
                yield "CWAgent", GPU_METRIC, dims

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        if period != 3600 or stat not in ("Maximum", "Average"):
            raise ApiError("UnsupportedByStandIn", "the digest stand-in answers hourly Maximum and Average")
        found = self._metrics.get(key)
        if found is None:
            return None
        all_times, all_values = self._points(found[0], found[1], found[2], stat)
        first, last = bisect_left(all_times, start), bisect_left(all_times, end)
        return all_times[first:last], all_values[first:last]

    def _points(self, machine: Machine, signal: str, gpu: int | None, stat: str) -> tuple[list[int], list[float]]:
        """Every hourly point of one series over the world's fortnight (cached by the series' shape)."""
        world = self.world
        phase = machine.index % 28 if machine.kind in ("trainer", "gappy", "silent") else 0
        key = (machine.kind, phase, signal, gpu, stat, machine.first_slot, machine.last_slot, machine.gpus)
        found = self._values.get(key)
        if found is None:
            times, values = [], []
            for slot in world.hours(machine):
                if signal == "cpu":
                    value: float | None = world.cpu(machine, slot)
                elif signal == "core":
                    value = world.busiest_core(machine, slot)
                elif gpu is None:  # the agent's aggregate over the GPUs
                    each = [world.gpu(machine, g, slot, stat) for g in range(machine.gpus)]
                    present = [v for v in each if v is not None]
                    value = (max(present) if stat == "Maximum" else sum(present) / len(present)) if present else None
                else:
                    value = world.gpu(machine, gpu, slot, stat)
                if value is not None:
                    times.append(world.origin_epoch + slot * 3600)
                    values.append(value)
            found = self._values[key] = (times, values)
        return found


class DigestNodes:
    """The digest world's SSM agents for testing/aws/ssm.py: the managed machines that run (stopped and
    terminated nodes are not listed); the digest sends no command."""

    def __init__(self, world: DigestWorld) -> None:
        self.world = world

    def nodes(self) -> list[tuple[str, str]]:
        return [(m.instance_id, "Online") for m in self.world.machines if m.managed and m.state == "running"]

    def check(self, instance_id: str) -> str | None:
        return None


class DigestBill:
    """The digest account's bill for testing/aws/costexplorer.py: a daily EC2 total (9,000 USD and up, by the
    day of the week), and its commitments' use and coverage."""

    def cost_and_usage(
        self,
        start: str,
        end: str,
        granularity: str,
        group_by: tuple[tuple[str, str], ...],
        scope: Mapping[str, Any] | None,
    ) -> list[Period]:
        if group_by or granularity != "DAILY":
            raise unsupported("anything but the digest account's daily total")
        days, day, last = [], date.fromisoformat(start), date.fromisoformat(end)
        while day < last:
            following = day + timedelta(days=1)
            days.append(Period(day.isoformat(), following.isoformat(), 9000.0 + (day.toordinal() % 7) * 250.0))
            day = following
        return days

    def reports(self) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        return {
            "GetReservationUtilization": lambda _: {
                "UtilizationsByTime": [], "Total": {"UtilizationPercentage": "91.5"}},
            "GetReservationCoverage": lambda _: {
                "CoveragesByTime": [], "Total": {"CoverageHours": {"CoverageHoursPercentage": "38.0"}}},
            "GetSavingsPlansUtilization": lambda _: {"Total": {"Utilization": {"UtilizationPercentage": "97.25"}}},
            # The plan's last two days, for the bill the idle hours are priced on: used up, and its eligible usage
            # beyond it billed on demand, as much as the world's on-demand fleet runs (far more than the daily
            # total above: the world's machines and its bill are not one account's): stops save the list price.
            "GetSavingsPlansUtilizationDetails": lambda p: {"TimePeriod": p["TimePeriod"],
                "SavingsPlansUtilizationDetails": [_plan_used_up(p["TimePeriod"])]},
            "GetSavingsPlansCoverage": lambda _: {
                "SavingsPlansCoverages": [{"Coverage": {"CoveragePercentage": "52.0", "OnDemandCost": "60000.0"}}] * 2},
        }  # fmt: skip


def _plan_used_up(period: Mapping[str, str]) -> dict[str, Any]:
    """The 40 USD/h plan's utilization details over `period`, used up, at 72 % of on demand (as Cost Explorer
    gives them: the commitment, its use, and what the usage it covered would have cost on demand)."""
    hours = 24 * (date.fromisoformat(period["End"]) - date.fromisoformat(period["Start"])).days
    committed = 40.0 * hours
    return plan_use(SAVINGS_PLAN_ARN, committed, committed, committed / 0.72)
