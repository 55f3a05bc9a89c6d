"""The benchmarks' AWS endpoint (testing/aws/server.py) answers like AWS where they depend on it: paging,
limits, exact dimensions.

The stopped sets are checked against moto by `make bench` itself (bench/versus.py `check_against_moto`);
these pin the behaviour that decides the call counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from testing.aws.server import StandIn
from testing.worlds.fleet import Fleet

N = 30


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn(Fleet(N)).start()
    yield server
    server.stop()


def client(standin: StandIn, service: str) -> Any:
    return boto3.client(  # type: ignore[call-overload]
        service,
        region_name="us-east-1",
        endpoint_url=standin.url,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


def test_describe_instances_pages_like_aws(standin: StandIn) -> None:
    ec2 = client(standin, "ec2")
    pages = list(ec2.get_paginator("describe_instances").paginate(PaginationConfig={"PageSize": 10}))
    assert [sum(len(r["Instances"]) for r in p["Reservations"]) for p in pages] == [10, 10, 10]
    assert len(ec2.describe_instances()["Reservations"]) == N, "without MaxResults: everything at once"
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        ec2.describe_instances(MaxResults=4)
    only = ec2.describe_instances(Filters=[{"Name": "instance-type", "Values": ["p4d.*"]}])["Reservations"]
    assert {r["Instances"][0]["InstanceType"] for r in only} == {"p4d.24xlarge"}
    assert standin.calls["ec2:DescribeInstances"] == 6


def test_stops_and_tags_are_recorded_and_limits_enforced(standin: StandIn) -> None:
    ec2 = client(standin, "ec2")
    first, second = standin.fleet.instances[0].instance_id, standin.fleet.instances[1].instance_id
    ec2.stop_instances(InstanceIds=[first, second])
    assert standin.stopped_indexes() == {0, 1}
    ec2.create_tags(Resources=[first], Tags=[{"Key": "k", "Value": "v"}])
    assert standin.tags[first]["k"] == "v"
    with pytest.raises(ClientError, match=r"InvalidInstanceID\.NotFound"):
        ec2.stop_instances(InstanceIds=[first, "i-0000000000000dead"])
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        ec2.create_tags(Resources=[first] * 1001, Tags=[{"Key": "k", "Value": "v"}])


def test_cloudwatch_matches_dimension_sets_exactly_and_keeps_its_limits(standin: StandIn) -> None:
    cloudwatch = client(standin, "cloudwatch")
    fleet = standin.fleet
    listed = [m for p in cloudwatch.get_paginator("list_metrics").paginate(Namespace="CWAgent") for m in p["Metrics"]]
    assert len(listed) == sum(1 for s in fleet.series if s.namespace == "CWAgent")
    per_gpu = next(s for s in fleet.series if s.gpu == 0)
    end = datetime.now(UTC)

    def query(dims: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        return {
            "Id": "q",
            "MetricStat": {
                "Metric": {
                    "Namespace": "CWAgent",
                    "MetricName": per_gpu.name,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
                },
                "Period": 300,
                "Stat": "Maximum",
            },
        }

    def values(dims: tuple[tuple[str, str], ...]) -> list[float]:
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=[query(dims)], StartTime=end - timedelta(hours=2), EndTime=end
        )
        return list(answer["MetricDataResults"][0]["Values"])

    assert len(values(per_gpu.dims)) >= 23, "a point every 5 minutes"
    assert values(per_gpu.dims[:2]) == [], "a subset of the dimensions matches nothing, as in CloudWatch"
    with pytest.raises(ClientError, match="ValidationError"):  # CloudWatch's code for a 501-query call
        cloudwatch.get_metric_data(
            MetricDataQueries=[{**query(per_gpu.dims), "Id": f"q{k}"} for k in range(501)],
            StartTime=end - timedelta(hours=2),
            EndTime=end,
        )
    with pytest.raises(ClientError, match="InvalidParameterCombination"):
        cloudwatch.get_metric_statistics(
            Namespace="AWS/EC2",
            MetricName="CPUUtilization",
            Dimensions=[{"Name": "InstanceId", "Value": per_gpu.instance.instance_id}],
            StartTime=end - timedelta(days=2),
            EndTime=end,
            Period=60,
            Statistics=["Maximum"],
        )


def test_a_call_it_does_not_implement_fails_loudly(standin: StandIn) -> None:
    with pytest.raises(ClientError, match="UnsupportedByStandIn"):
        client(standin, "ec2").describe_volumes()
    assert standin.unsupported == ["DescribeVolumes"]
