"""The bill's answers where moto has none, for the integration tests: Reserved Instances, capacity
reservations and Capacity Blocks (testing/aws/ec2.py), Savings Plans (testing/aws/savingsplans.py) and their
use, and the instance fields that say a machine runs in reserved capacity (moto's DescribeInstances carries
neither CapacityReservationId nor the capacity-block lifecycle).

Registered on a runtime's own clients: botocore's `before-parameter-build` keeps the call's parameters,
`before-call` answers it from the stand-in (as botocore's Stubber answers), `after-call` adds the fields
moto leaves out; the handler and boto3 run unchanged."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders

from costguard.core.bill import Bill
from costguard.core.money import Marginal
from costguard.core.records import Instance
from testing.aws.ec2 import Ec2, Ec2World
from testing.aws.savingsplans import SavingsPlans


class _Bill(Ec2World):
    def __init__(self, reserved: Sequence[Mapping[str, Any]], holds: Sequence[Mapping[str, Any]]) -> None:
        self._reserved, self._holds = reserved, holds

    def reserved_instances(self) -> Sequence[Mapping[str, Any]]:
        return self._reserved

    def capacity_reservations(self) -> Sequence[Mapping[str, Any]]:
        return self._holds


def _answer(client: Any, event: str, answer: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
    """The client's `event` call (service.Operation) answered by `answer` over the call's own parameters."""

    def keep(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["stand-in params"] = dict(params)

    def respond(context: Mapping[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body = answer(context.get("stand-in params", {}))
        http = AWSResponse("https://stand-in", 200, HTTPHeaders(), None)
        return http, {**body, "ResponseMetadata": {"HTTPStatusCode": 200}}

    client.meta.events.register(f"before-parameter-build.{event}", keep)
    client.meta.events.register(f"before-call.{event}", respond)


def answer_the_bill(
    runtime: Any,
    region: str,
    *,
    reserved: Sequence[Mapping[str, Any]] = (),
    holds: Sequence[Mapping[str, Any]] = (),
    plans: Sequence[Mapping[str, Any]] = (),
    plan_use: Mapping[str, float] | None = None,
    in_holds: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """`in_holds`: instance id -> the fields that put it in reserved capacity (CapacityReservationId,
    InstanceLifecycle)."""
    ec2 = runtime.client("ec2", region)
    fake_ec2 = Ec2(_Bill(reserved, holds), region)
    _answer(ec2, "ec2.DescribeReservedInstances", fake_ec2.describe_reserved_instances)
    _answer(ec2, "ec2.DescribeCapacityReservations", fake_ec2.describe_capacity_reservations)
    savings = SavingsPlans(lambda: plans)
    _answer(
        runtime.client("savingsplans", "us-east-1"), "savingsplans.DescribeSavingsPlans", savings.describe_savings_plans
    )
    details = [
        {"SavingsPlanArn": arn, "Utilization": {"UtilizationPercentage": str(used)}}
        for arn, used in (plan_use or {}).items()
    ]
    ce = runtime.client("ce", "us-east-1")
    _answer(
        ce,
        "ce.GetSavingsPlansUtilizationDetails",
        lambda p: {"SavingsPlansUtilizationDetails": details, "TimePeriod": p["TimePeriod"]},
    )
    _answer(ce, "ce.GetSavingsPlansCoverage", lambda _p: {"SavingsPlansCoverages": []})
    if in_holds:
        fields = dict(in_holds)

        def add_fields(parsed: dict[str, Any], **_: Any) -> None:
            for reservation in parsed.get("Reservations", []):
                for instance in reservation.get("Instances", []):
                    instance.update(fields.get(instance.get("InstanceId", ""), {}))

        ec2.meta.events.register("after-call.ec2.DescribeInstances", add_fields)


def price_in_turn(
    bill: Bill, instances: Iterable[Instance], on_demand: Mapping[str, float | None]
) -> dict[str, Marginal]:
    """Each machine's marginal price as if the ones before it were stopped (the order of the stops), by
    costguard's own model: what the unit tests of core/money.py price a fleet with."""
    out: dict[str, Marginal] = {}
    for instance in instances:
        marginal = bill.price(instance, on_demand.get(instance.instance_type))
        out[instance.instance_id] = marginal
        bill.stopped(instance, marginal)
    return out
