"""testing/aws's EC2, Savings Plans and SQS stand-ins refuse what AWS refuses of what costguard sends, in
process and over the wire (botocore's own client against the query protocol and its XML)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from testing.aws.ec2 import Ec2, Ec2Instance, Ec2World
from testing.aws.errors import ApiError
from testing.aws.savingsplans import SavingsPlans
from testing.aws.sqs import Sqs

LAUNCH = datetime(2026, 11, 1, tzinfo=UTC)


class Yard(Ec2World):
    """Twelve machines: g5 and p4d on demand, one instance-store root, one one-time Spot, one hibernating."""

    def __init__(self) -> None:
        self.machines = [
            Ec2Instance(f"i-{k:017x}", "g5.xlarge" if k % 2 else "p4d.24xlarge", "running", LAUNCH, {"Owner": f"o{k}"})
            for k in range(12)
        ]
        self.machines[1].root_device_type = "instance-store"
        self.machines[3].lifecycle, self.machines[3].spot_request_type = "spot", "one-time"
        self.machines[5].hibernation_configured = True
        self.machines[7].state = "stopped"
        self.stops: list[tuple[str, bool]] = []

    def instances(self) -> Sequence[Ec2Instance]:
        return self.machines

    def stop(self, instance_id: str, hibernate: bool) -> None:
        self.stops.append((instance_id, hibernate))
        found = next(m for m in self.machines if m.instance_id == instance_id)
        found.state = "stopped"

    def start(self, instance_id: str) -> None:
        next(m for m in self.machines if m.instance_id == instance_id).state = "running"

    def capacity_reservations(self) -> list[dict[str, Any]]:
        return [
            {"CapacityReservationId": f"cr-{k}", "State": "active", "InstanceType": "p4d.24xlarge"} for k in range(3)
        ]


def ids(answer: dict[str, Any]) -> list[str]:
    return [i["InstanceId"] for r in answer["Reservations"] for i in r["Instances"]]


def refused(call: Any, params: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as caught:
        call(params)
    return caught.value.code


def test_describe_instances_filters_by_type_wildcard_and_state_and_pages_by_instance() -> None:
    ec2 = Ec2(Yard())
    filters = [{"Name": "instance-state-name", "Values": ["running"]}, {"Name": "instance-type", "Values": ["g5.*"]}]
    g5 = ec2.describe_instances({"Filters": filters, "MaxResults": 1000})
    assert ids(g5) == [f"i-{k:017x}" for k in (1, 3, 5, 9, 11)]
    pages, token = [], ""
    while True:
        page = ec2.describe_instances(
            {"Filters": filters[:1], "MaxResults": 5, **({"NextToken": token} if token else {})}
        )
        pages.append(ids(page))
        token = page.get("NextToken", "")
        if not token:
            break
    assert [len(p) for p in pages] == [5, 5, 1]
    assert refused(ec2.describe_instances, {"MaxResults": 4}) == "InvalidParameterValue"
    assert refused(ec2.describe_instances, {"MaxResults": 1001}) == "InvalidParameterValue"
    assert refused(ec2.describe_instances, {"InstanceIds": ["i-00000000000000000"], "MaxResults": 5}) == (
        "InvalidParameterCombination"
    )
    assert refused(ec2.describe_instances, {"Filters": [{"Name": "platform-details", "Values": ["x"]}]}) == (
        "InvalidParameterValue"
    )
    assert refused(ec2.describe_instances, {"InstanceIds": ["i-0123456789abcdef0"]}) == "InvalidInstanceID.NotFound"


def test_stop_refuses_instance_store_one_time_spot_and_unconfigured_hibernation_before_stopping_any() -> None:
    yard = Yard()
    ec2 = Ec2(yard)
    for k, hibernate, code in ((1, False, "UnsupportedOperation"), (3, False, "UnsupportedOperation"),
                               (0, True, "UnsupportedHibernationConfiguration")):  # fmt: skip
        params = {"InstanceIds": ["i-00000000000000000", f"i-{k:017x}"], "Hibernate": hibernate}
        assert refused(ec2.stop_instances, params) == code
    assert yard.stops == [], "one refusal fails the whole call"
    answer = ec2.stop_instances({"InstanceIds": [f"i-{5:017x}"], "Hibernate": True})
    assert yard.stops == [(f"i-{5:017x}", True)]
    assert answer["StoppingInstances"][0]["CurrentState"]["Name"] == "stopping"
    assert refused(ec2.stop_instances, {"InstanceIds": ["i-1"]}) == "InvalidInstanceID.Malformed"
    assert refused(ec2.stop_instances, {}) == "ValidationError"


def test_tags_are_written_on_up_to_1000_resources_and_aws_keys_refused() -> None:
    yard = Yard()
    ec2 = Ec2(yard)
    first = yard.machines[0].instance_id
    ec2.create_tags({"Resources": [first], "Tags": [{"Key": "costguard:stop-after", "Value": "x"}]})
    assert yard.machines[0].tags["costguard:stop-after"] == "x"
    ec2.delete_tags({"Resources": [first], "Tags": [{"Key": "costguard:stop-after"}]})
    assert "costguard:stop-after" not in yard.machines[0].tags
    assert refused(ec2.create_tags, {"Resources": [first] * 1001, "Tags": [{"Key": "k", "Value": "v"}]}) == (
        "InvalidParameterValue"
    )
    assert refused(ec2.create_tags, {"Resources": [first], "Tags": [{"Key": "aws:x", "Value": "v"}]}) == (
        "InvalidParameterValue"
    )
    many = [{"Key": f"k{n}", "Value": "v"} for n in range(50)]
    assert refused(ec2.create_tags, {"Resources": [first], "Tags": many}) == "TagLimitExceeded"


def test_capacity_reservations_page_and_refuse_an_unknown_filter() -> None:
    ec2 = Ec2(Yard())
    state = [{"Name": "state", "Values": ["active", "scheduled", "payment-pending"]}]
    first = ec2.describe_capacity_reservations({"Filters": state, "MaxResults": 2})
    rest = ec2.describe_capacity_reservations({"Filters": state, "MaxResults": 2, "NextToken": first["NextToken"]})
    assert [c["CapacityReservationId"] for c in first["CapacityReservations"] + rest["CapacityReservations"]] == [
        "cr-0", "cr-1", "cr-2"]  # fmt: skip
    assert refused(ec2.describe_capacity_reservations, {"MaxResults": 1001}) == "InvalidParameterValue"
    assert refused(ec2.describe_capacity_reservations, {"Filters": [{"Name": "owner", "Values": ["x"]}]}) == (
        "InvalidParameterValue"
    )


def test_savings_plans_refuse_a_state_outside_the_api_and_page_by_next_token() -> None:
    plans = SavingsPlans(lambda: [{"savingsPlanId": f"sp-{k}", "savingsPlanArn": f"a{k}", "state": "active"}
                                  for k in range(3)])  # fmt: skip
    first = plans.describe_savings_plans({"states": ["active"], "maxResults": 2})
    rest = plans.describe_savings_plans({"states": ["active"], "maxResults": 2, "nextToken": first["nextToken"]})
    assert [p["savingsPlanId"] for p in first["savingsPlans"] + rest["savingsPlans"]] == ["sp-0", "sp-1", "sp-2"]
    assert refused(plans.describe_savings_plans, {"states": ["expired"]}) == "ValidationException"
    assert refused(plans.describe_savings_plans, {"Filters": []}) == "ValidationException"


def test_sqs_keeps_its_limits_and_deletes_only_what_it_handed_out() -> None:
    sqs = Sqs()
    url = {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/figures"}
    sqs.send_message({**url, "MessageBody": "week"})
    assert refused(sqs.send_message, {**url, "MessageBody": "x" * 262_145}) == "InvalidParameterValue"
    assert refused(sqs.send_message, {"MessageBody": "week"}) == "MissingParameter"
    assert refused(sqs.receive_message, {**url, "MaxNumberOfMessages": 11}) == "InvalidParameterValue"
    got = sqs.receive_message({**url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0})["Messages"]
    assert [m["Body"] for m in got] == ["week"]
    entries = [{"Id": "0", "ReceiptHandle": got[0]["ReceiptHandle"]}, {"Id": "1", "ReceiptHandle": "never"}]
    assert refused(sqs.delete_message_batch, {**url, "Entries": entries[:1] * 2}) == "BatchEntryIdsNotDistinct"
    answer = sqs.delete_message_batch({**url, "Entries": entries})
    assert ([e["Id"] for e in answer["Successful"]], [e["Id"] for e in answer["Failed"]]) == (["0"], ["1"])
    assert sqs.deleted == ["week"]
    assert sqs.messages == []
