"""The AWS stand-ins of testing/aws refuse what AWS refuses, so that a test or a benchmark passing on them
means costguard's requests would pass on AWS: CloudWatch's 500-query limit, its exact dimension sets and
its paging; DynamoDB's expressions, batch limits and transactions; SSM's, Pricing's and Cost Explorer's
limits and filters."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from testing.aws.cloudwatch import MAX_POINTS_PER_CALL, CloudWatch, CloudWatchClient, Listed, Points, SeriesKey
from testing.aws.costexplorer import CostExplorer, Period
from testing.aws.dynamodb import DynamoDB
from testing.aws.errors import ApiError
from testing.aws.pricing import Pricing
from testing.aws.ssm import SystemsManager

T0 = datetime(2026, 11, 2, tzinfo=UTC).timestamp()
GPU = (("InstanceId", "i-0a"), ("index", "0"), ("name", "NVIDIA A10G"), ("arch", "Ampere"))


class Minutely:
    """One GPU series (the agent's four dimensions) with a point every minute of a week."""

    def listed(self, recently_active: bool) -> Sequence[Listed]:
        return [("CWAgent", "nvidia_smi_utilization_gpu", GPU)]

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        if key != ("CWAgent", "nvidia_smi_utilization_gpu", frozenset(GPU)):
            return None
        times = [t for t in range(int(T0), int(T0) + 7 * 86400, period) if start <= t < end]
        return times, [float(t % 100) for t in times]


def query(qid: str, dims: Sequence[tuple[str, str]] = GPU, period: int = 60) -> dict[str, Any]:
    metric = {
        "Namespace": "CWAgent",
        "MetricName": "nvidia_smi_utilization_gpu",
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
    }
    return {"Id": qid, "MetricStat": {"Metric": metric, "Period": period, "Stat": "Maximum"}}


def metric_data(queries: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    week = {"StartTime": T0, "EndTime": T0 + 7 * 86400, "ScanBy": "TimestampAscending"}
    return CloudWatch(Minutely()).get_metric_data({"MetricDataQueries": queries, **week, **extra})


def test_a_get_metric_data_of_501_queries_is_refused_and_one_of_500_is_answered() -> None:
    with pytest.raises(ApiError) as refused:
        metric_data([query(f"q{n}", period=3600) for n in range(501)])
    assert refused.value.code == "ValidationError"
    answer = metric_data([query(f"q{n}", period=3600) for n in range(500)])
    assert len(answer["MetricDataResults"]) == 500


def test_a_query_whose_dimensions_are_a_subset_of_a_published_series_gets_nothing() -> None:
    subset = [("InstanceId", "i-0a"), ("index", "0")]  # the series also has name and arch
    superset = [*GPU, ("host", "ip-10-0-0-1")]
    answer = metric_data([query("exact", period=3600), query("subset", subset, 3600), query("more", superset, 3600)])
    points = {r["Id"]: len(r["Timestamps"]) for r in answer["MetricDataResults"]}
    assert points == {"exact": 7 * 24, "subset": 0, "more": 0}


def test_an_answer_of_more_than_100800_points_is_paged_and_the_pages_hold_every_point() -> None:
    queries = [query("a"), query("b"), query("c")]  # three series of 10,080 minutes: 30,240 points
    first = metric_data(queries * 1 + [query(f"x{n}") for n in range(8)])  # 11 series: 110,880 points
    assert sum(len(r["Timestamps"]) for r in first["MetricDataResults"]) == MAX_POINTS_PER_CALL
    assert first["MetricDataResults"][-1]["StatusCode"] == "PartialData"
    rest = metric_data(queries + [query(f"x{n}") for n in range(8)], NextToken=first["NextToken"])
    assert "NextToken" not in rest
    assert sum(len(r["Timestamps"]) for r in first["MetricDataResults"] + rest["MetricDataResults"]) == 11 * 10_080
    with pytest.raises(ApiError) as refused:
        metric_data(queries, NextToken="not-a-token")
    assert refused.value.code == "InvalidNextToken"


def test_metric_math_duplicate_ids_and_odd_periods_are_refused_not_answered_empty() -> None:
    for queries in (
        [{"Id": "m", "Expression": "SEARCH('{CWAgent,InstanceId} nvidia', 'Maximum', 300)"}],
        [query("q"), query("q")],
        [query("Q")],
        [query("q", period=90)],
    ):
        with pytest.raises(ApiError):
            metric_data(queries)


def test_the_in_process_client_pages_list_metrics_and_raises_client_errors() -> None:
    client = CloudWatchClient(Minutely())
    pages = list(client.get_paginator("list_metrics").paginate(Namespace="CWAgent"))
    assert [len(p["Metrics"]) for p in pages] == [1]
    assert client.calls == {"ListMetrics": 1}
    start = datetime.fromtimestamp(T0, UTC)
    answer = client.get_metric_data(
        MetricDataQueries=[query("q", period=3600)],
        StartTime=start,
        EndTime=start + timedelta(hours=2),
        ScanBy="TimestampAscending",
    )
    assert answer["MetricDataResults"][0]["Timestamps"] == [start, start + timedelta(hours=1)]
    with pytest.raises(ClientError) as refused:
        client.get_metric_data(MetricDataQueries=[], StartTime=start, EndTime=start + timedelta(hours=2))
    assert refused.value.response["Error"]["Code"] == "ValidationError"


# ---------------------------------------------------------------------- DynamoDB
TABLE = "costguard-state"


def key(pk: str, sk: str = "-") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def test_a_conditional_put_on_an_item_that_exists_is_refused_and_returns_the_old_item_when_asked() -> None:
    db = DynamoDB()
    first = {"TableName": TABLE, "Item": {**key("claim#1"), "status": {"S": "pending"}}}
    db.put_item({**first, "ConditionExpression": "attribute_not_exists(pk)"})
    with pytest.raises(ApiError) as refused:
        db.put_item({**first, "ConditionExpression": "attribute_not_exists(pk)"})
    assert refused.value.code == "ConditionalCheckFailedException"
    old = db.put_item({**first, "ReturnValues": "ALL_OLD"})
    assert old["Attributes"]["status"] == {"S": "pending"}


def test_a_value_or_name_no_expression_uses_is_refused_as_dynamodb_refuses_it() -> None:
    db = DynamoDB()
    item = {"TableName": TABLE, "Item": key("a")}
    with pytest.raises(ApiError, match="unused"):
        db.put_item(
            {**item, "ConditionExpression": "attribute_not_exists(pk)", "ExpressionAttributeValues": {":x": {"S": "1"}}}
        )
    with pytest.raises(ApiError, match="not defined"):
        db.put_item({**item, "ConditionExpression": "lease_until < :now"})


def test_an_update_appends_to_a_list_it_creates_and_removes_what_it_is_told() -> None:
    db = DynamoDB()
    append = {
        "TableName": TABLE,
        "Key": key("history#i-1"),
        "UpdateExpression": "SET changes = list_append(if_not_exists(changes, :none), :one), lease_until = :t",
        "ExpressionAttributeValues": {":none": {"L": []}, ":one": {"L": [{"S": "a"}]}, ":t": {"N": "5"}},
        "ReturnValues": "UPDATED_NEW",
    }
    db.update_item(append)
    answer = db.update_item(append)
    assert answer["Attributes"]["changes"] == {"L": [{"S": "a"}, {"S": "a"}]}
    db.update_item({"TableName": TABLE, "Key": key("history#i-1"), "UpdateExpression": "REMOVE lease_until"})
    assert "lease_until" not in db.get_item({"TableName": TABLE, "Key": key("history#i-1")})["Item"]


def test_an_update_adds_to_and_deletes_from_a_string_set_as_dynamodb_does() -> None:
    db = DynamoDB()

    def update(expression: str, *members: str) -> dict[str, Any]:
        return db.update_item(
            {
                "TableName": TABLE,
                "Key": key("live-stale"),
                "UpdateExpression": expression,
                "ExpressionAttributeValues": {":m": {"SS": list(members)}},
            }
        )

    update("DELETE messages :m", "C1#1.1")  # nothing to delete from: no error, no attribute
    assert "messages" not in db.get_item({"TableName": TABLE, "Key": key("live-stale")})["Item"]
    update("ADD messages :m", "C1#1.1#a", "C1#2.2#a")
    update("ADD messages :m", "C1#1.1#a", "C1#1.1#b")  # a set: each member once
    assert sorted(db.get_item({"TableName": TABLE, "Key": key("live-stale")})["Item"]["messages"]["SS"]) == [
        "C1#1.1#a",
        "C1#1.1#b",
        "C1#2.2#a",
    ]
    update("DELETE messages :m", "C1#1.1#a", "C1#2.2#a", "C1#9.9#z")
    assert db.get_item({"TableName": TABLE, "Key": key("live-stale")})["Item"]["messages"] == {"SS": ["C1#1.1#b"]}
    update("DELETE messages :m", "C1#1.1#b")  # an empty set is no attribute
    assert "messages" not in db.get_item({"TableName": TABLE, "Key": key("live-stale")})["Item"]
    with pytest.raises(ApiError) as refused:
        db.update_item(
            {
                "TableName": TABLE,
                "Key": key("live-stale"),
                "UpdateExpression": "ADD messages :m",
                "ExpressionAttributeValues": {":m": {"S": "C1#1.1"}},  # ADD takes a set or a number
            }
        )
    assert refused.value.code == "ValidationException"
    for members in ((), ("C1#1.1#a", "C1#1.1#a")):  # DynamoDB refuses an empty set and a set given twice a member
        with pytest.raises(ApiError) as refused:
            update("ADD messages :m", *members)
        assert refused.value.code == "ValidationException"


def test_a_transaction_is_all_or_nothing_and_never_two_actions_on_one_item() -> None:
    db = DynamoDB()
    db.put_item({"TableName": TABLE, "Item": key("taken")})
    free = {"Put": {"TableName": TABLE, "Item": key("free"), "ConditionExpression": "attribute_not_exists(pk)"}}
    taken = {"Put": {"TableName": TABLE, "Item": key("taken"), "ConditionExpression": "attribute_not_exists(pk)"}}
    with pytest.raises(ApiError) as cancelled:
        db.transact_write_items({"TransactItems": [free, taken]})
    assert cancelled.value.code == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled.value.extra["CancellationReasons"]] == ["None", "ConditionalCheckFailed"]
    assert db.get_item({"TableName": TABLE, "Key": key("free")}) == {}  # nothing of it was written
    with pytest.raises(ApiError, match="multiple operations on one item"):
        db.transact_write_items({"TransactItems": [free, free]})
    with pytest.raises(ApiError):
        db.transact_write_items({"TransactItems": [free] * 101})


def test_batches_beyond_dynamodbs_limits_are_refused() -> None:
    db = DynamoDB()
    with pytest.raises(ApiError):
        db.batch_write_item({"RequestItems": {TABLE: [{"PutRequest": {"Item": key(f"k{n}")}} for n in range(26)]}})
    with pytest.raises(ApiError):
        db.batch_get_item({"RequestItems": {TABLE: {"Keys": [key(f"k{n}") for n in range(101)]}}})


def test_a_query_reads_one_partition_in_sort_key_order_between_bounds() -> None:
    db = DynamoDB()
    for day in ("2026-11-03", "2026-11-01", "2026-11-02", "2026-11-09"):
        db.put_item({"TableName": TABLE, "Item": key("week#hub", day)})
    db.put_item({"TableName": TABLE, "Item": key("week#other", "2026-11-02")})
    answer = db.query(
        {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
            "ExpressionAttributeValues": {
                ":pk": {"S": "week#hub"},
                ":a": {"S": "2026-11-01"},
                ":b": {"S": "2026-11-03"},
            },
        }
    )
    assert [i["sk"]["S"] for i in answer["Items"]] == ["2026-11-01", "2026-11-02", "2026-11-03"]


# ---------------------------------------------------------------------- SSM, Pricing, Cost Explorer
class Nodes:
    def nodes(self) -> list[tuple[str, str]]:
        return [(f"i-{n:017x}", "Online") for n in range(60)]

    def check(self, instance_id: str) -> str | None:
        return None if instance_id.endswith("1") else "x" * 3000


def test_ssm_pages_its_nodes_and_refuses_a_command_to_more_than_50_instances() -> None:
    ssm = SystemsManager(Nodes())
    first = ssm.describe_instance_information({"MaxResults": 50})
    rest = ssm.describe_instance_information({"MaxResults": 50, "NextToken": first["NextToken"]})
    assert (len(first["InstanceInformationList"]), len(rest["InstanceInformationList"])) == (50, 10)
    with pytest.raises(ApiError):
        ssm.describe_instance_information({"MaxResults": 51})
    with pytest.raises(ApiError):
        ssm.describe_instance_information({"Filters": [{"Key": "PingStatus", "Values": ["Online"]}]})
    ids = [i for i, _ in Nodes().nodes()]
    with pytest.raises(ApiError):
        ssm.send_command({"DocumentName": "costguard-activity-check", "InstanceIds": ids[:51]})
    command = ssm.send_command({"DocumentName": "costguard-activity-check", "InstanceIds": ids[:2]})
    answer = ssm.list_command_invocations({"CommandId": command["Command"]["CommandId"], "Details": True})
    statuses = {
        i["InstanceId"][-1]: (i["Status"], len(i["CommandPlugins"][0]["Output"])) for i in answer["CommandInvocations"]
    }
    assert statuses == {"0": ("Success", 2500), "1": ("InProgress", 0)}  # SSM keeps 2,500 characters of output
    with pytest.raises(ApiError) as unknown:
        ssm.list_command_invocations({"CommandId": "not-a-command"})
    assert unknown.value.code == "InvalidCommandId"


class Prices:
    def ec2(self, instance_type: str) -> dict[str, float]:
        return {"us-east-1": 1.006, "eu-west-1": 1.123} if instance_type == "g5.xlarge" else {}

    def sagemaker(self, instance_name: str, region: str) -> dict[str, float]:
        return {}


def ec2_filters(**terms: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def test_pricing_matches_every_filter_exactly_and_keeps_its_limits() -> None:
    pricing = Pricing(Prices())
    linux = {"operatingSystem": "Linux", "tenancy": "Shared", "capacitystatus": "Used"}
    one = pricing.get_products(
        {"ServiceCode": "AmazonEC2", "Filters": ec2_filters(instanceType="g5.xlarge", regionCode="us-east-1", **linux)}
    )
    assert len(one["PriceList"]) == 1
    everywhere = pricing.get_products(
        {"ServiceCode": "AmazonEC2", "Filters": ec2_filters(instanceType="g5.xlarge", locationType="AWS Region")}
    )
    assert len(everywhere["PriceList"]) == 2
    windows = pricing.get_products(
        {"ServiceCode": "AmazonEC2", "Filters": ec2_filters(instanceType="g5.xlarge", operatingSystem="Windows")}
    )
    assert windows["PriceList"] == []  # not the product a price stands for
    with pytest.raises(ApiError):
        pricing.get_products(
            {"ServiceCode": "AmazonEC2", "Filters": ec2_filters(instanceType="g5.xlarge"), "MaxResults": 101}
        )
    with pytest.raises(ApiError):
        pricing.get_products({"ServiceCode": "AmazonEC2", "Filters": [{"Type": "ANY_OF", "Field": "a", "Value": "b"}]})
    assert pricing.asked == {"g5.xlarge": 3}


class DailyBill:
    def cost_and_usage(self, start: str, end: str, granularity: str, group_by: Any, scope: Any) -> list[Period]:
        return [Period("2026-11-01", "2026-11-02", groups=[((f"g{n}",), 1.0) for n in range(1500)])]

    def reports(self) -> dict[str, Any]:
        return {}


def test_cost_explorer_refuses_what_cost_explorer_refuses_and_pages_its_groups() -> None:
    explorer = CostExplorer(DailyBill())
    ask = {
        "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"},
        "Granularity": "DAILY",
        "Metrics": ["UnblendedCost"],
        "GroupBy": [{"Type": "DIMENSION", "Key": "SERVICE"}],
    }
    first = explorer.get_cost_and_usage(ask)
    rest = explorer.get_cost_and_usage({**ask, "NextPageToken": first["NextPageToken"]})
    assert [len(p["ResultsByTime"][0]["Groups"]) for p in (first, rest)] == [1000, 500]
    for wrong in (
        {**ask, "TimePeriod": {"Start": "2026-11-02", "End": "2026-11-01"}},
        {**ask, "Metrics": []},
        {k: v for k, v in ask.items() if k != "Granularity"},
        {**ask, "GroupBy": [{"Type": "DIMENSION", "Key": k} for k in ("SERVICE", "REGION", "USAGE_TYPE")]},
    ):
        with pytest.raises(ApiError):
            explorer.get_cost_and_usage(wrong)
    with pytest.raises(ApiError, match="does not implement"):
        explorer.report("GetCostForecast")({"TimePeriod": ask["TimePeriod"]})
