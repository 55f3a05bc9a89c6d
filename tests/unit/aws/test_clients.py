"""costguard's boto3 session parses answers as botocore does, only faster where answers are large."""

from __future__ import annotations

import json
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore
import botocore.session
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ParamValidationError
from botocore.loaders import JSONFileLoader
from botocore.parsers import JSONParser
from botocore.serialize import JSONSerializer
from botocore.utils import parse_timestamp

from costguard.aws import clients
from costguard.aws.clients import (
    ClientFactory,
    PlainJSONFileLoader,
    PlainJSONSerializer,
    ResponseParsers,
    ScalarListsJSONParser,
    fast_timestamp,
    new_session,
)
from costguard.aws.operations import OPERATIONS


def parse(parser: Any, service: str, operation: str, body: dict[str, Any]) -> Any:
    shape = botocore.session.get_session().get_service_model(service).operation_model(operation).output_shape
    response = {"body": json.dumps(body).encode(), "headers": {}, "status_code": 200, "context": {}}
    return parser.parse(response, shape)


def test_a_metric_data_answer_is_parsed_to_exactly_what_botocore_makes_of_it() -> None:
    body = {
        "MetricDataResults": [
            {
                "Id": "q0",
                "Label": "GPU 0",
                "Timestamps": [1_700_000_000, 1_700_003_600.5, None, "2026-11-23T09:00:00Z"],
                "Values": [1.5, 0, None, 99.25],
                "StatusCode": "PartialData",
                "Messages": [{"Code": "MaxDatapoints", "Value": "100800"}],
            }
        ],
        "NextToken": "1:2",
        "Messages": [],
    }
    fast = parse(ScalarListsJSONParser(timestamp_parser=fast_timestamp), "cloudwatch", "GetMetricData", body)
    slow = parse(JSONParser(timestamp_parser=fast_timestamp), "cloudwatch", "GetMetricData", body)
    assert fast == slow
    [result] = fast["MetricDataResults"]
    assert result["Timestamps"][0] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert result["Timestamps"][2] is None
    assert result["Values"][2] is None
    assert result["Timestamps"][3] == datetime(2026, 11, 23, 9, tzinfo=UTC)


def test_lists_of_structures_and_strings_are_parsed_as_botocore_parses_them() -> None:
    body = {
        "InstanceInformationList": [
            {"InstanceId": "i-1", "PingStatus": "Online", "LastPingDateTime": 1_700_000_000, "IPAddress": "10.0.0.1"}
        ],
        "NextToken": "t",
    }
    fast = parse(ScalarListsJSONParser(timestamp_parser=fast_timestamp), "ssm", "DescribeInstanceInformation", body)
    assert fast == parse(JSONParser(timestamp_parser=fast_timestamp), "ssm", "DescribeInstanceInformation", body)
    assert fast["InstanceInformationList"][0]["LastPingDateTime"] == datetime.fromtimestamp(1_700_000_000, UTC)


def test_the_session_parses_json_answers_with_the_fast_parser_and_the_rest_as_botocore_does() -> None:
    factory = new_session()._session.get_component("response_parser_factory")
    assert isinstance(factory, ResponseParsers)
    assert type(factory.create_parser("json")) is ScalarListsJSONParser
    assert type(factory.create_parser("ec2")).__name__ == "EC2QueryParser"


def test_the_utc_times_ec2_sends_are_read_as_botocore_reads_them() -> None:
    for text in ("2026-10-24T09:17:00.000Z", "2026-10-24T09:17:00Z", "2026-10-24T09:17:00.123456Z"):
        assert fast_timestamp(text) == parse_timestamp(text)
        assert fast_timestamp(text).utcoffset() == timedelta(0)
    # anything else goes to botocore: offsets, RFC 822, a time without a zone
    for text in ("2026-10-24T09:17:00+02:00", "Sat, 24 Oct 2026 09:17:00 GMT", "2026-10-24T09:17:00"):
        assert fast_timestamp(text) == parse_timestamp(text)


def _sent(client: Any, **params: Any) -> bytes:
    """The body `client` sends for GetMetricData(**params), answered by a stand-in before it leaves."""
    sent: list[bytes] = []

    def answer(request: Any, **_: Any) -> Any:
        sent.append(request.body)
        raw = type("Raw", (), {"stream": lambda self, **_: iter([b'{"MetricDataResults": []}'])})()
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        return AWSResponse(request.url, 200, headers, raw)

    client.meta.events.register("before-send.cloudwatch.GetMetricData", answer)
    client.get_metric_data(**params)
    return sent[0]


def test_a_bulk_client_sends_the_same_request_without_checking_its_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    factory = ClientFactory(default_region="us-east-1")
    checked, bulk = factory.get("cloudwatch"), factory.get("cloudwatch", bulk=True)
    assert bulk is not checked  # apart from the checked one,
    assert factory.get("cloudwatch", bulk=True) is bulk  # and one per container
    by_id = [{"Name": "InstanceId", "Value": "i-1"}]
    metric = {"Namespace": "AWS/EC2", "MetricName": "CPUUtilization", "Dimensions": by_id}
    query = {"Id": "q0", "MetricStat": {"Metric": metric, "Period": 3600, "Stat": "Maximum"}, "ReturnData": True}
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 15, tzinfo=UTC)
    params = {"MetricDataQueries": [query], "StartTime": start, "EndTime": end, "ScanBy": "TimestampAscending"}
    assert _sent(bulk, **params) == _sent(checked, **params)
    wrong = {**params, "MetricDataQueries": [{**query, "Id": 7}]}  # an Id must be a string
    with pytest.raises(ParamValidationError):
        _sent(checked, **wrong)
    assert b'"Id": 7' in _sent(bulk, **wrong)  # sent as given: the check is the caller's, who built it


def test_a_session_drops_the_models_documentation_and_sends_the_requests_botocore_sends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    lean = new_session(slim=False).client("cloudwatch", region_name="us-east-1")
    plain = botocore.session.get_session().create_client("cloudwatch", region_name="us-east-1")
    operation = lean.meta.service_model.operation_model("GetMetricData")
    assert operation.documentation == ""
    assert plain.meta.service_model.operation_model("GetMetricData").documentation != ""
    assert lean.meta.service_model.operation_names == plain.meta.service_model.operation_names
    by_id = [{"Name": "InstanceId", "Value": "i-1"}]
    metric = {"Namespace": "AWS/EC2", "MetricName": "CPUUtilization", "Dimensions": by_id}
    query = {"Id": "q0", "MetricStat": {"Metric": metric, "Period": 3600, "Stat": "Maximum"}, "ReturnData": True}
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 15, tzinfo=UTC)
    params = {"MetricDataQueries": [query], "StartTime": start, "EndTime": end}
    assert _sent(lean, **params) == _sent(plain, **params)


def test_a_client_put_in_use_is_handed_out_for_every_kind_of_that_service_and_region() -> None:
    factory, stand_in = ClientFactory(default_region="us-east-1"), object()
    factory.use("cloudwatch", "us-east-1", stand_in)
    assert factory.get("cloudwatch") is stand_in
    assert factory.get("cloudwatch", "us-east-1", quick=True) is stand_in
    assert factory.get("cloudwatch", "us-east-1", bulk=True) is stand_in


EC2_XML = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def _answering(client: Any, body: bytes, content_type: str = "text/xml") -> list[tuple[str, str]]:
    """Every request `client` (or a client of the session `client` is) sends, answered with `body` before it
    leaves: what was sent, by operation."""
    sent: list[tuple[str, str]] = []

    def answer(request: Any, **kwargs: Any) -> Any:
        text = request.body.decode() if isinstance(request.body, bytes) else str(request.body)
        sent.append((kwargs["event_name"].rsplit(".", 1)[-1], text))
        raw = type("Raw", (), {"stream": lambda self, **_: iter([body])})()
        headers = HTTPHeaders()
        headers["Content-Type"] = content_type
        return AWSResponse(request.url, 200, headers, raw)

    events = client.meta.events if hasattr(client, "meta") else client._session
    events.register("before-send", answer)
    return sent


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def full_session(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The session a slim client falls back to, made here so that its requests can be answered and seen."""
    session = clients.new_session(slim=False)
    monkeypatch.setattr(clients, "_full_sessions", [session])
    return session


def test_a_slim_client_holds_only_the_operations_costguard_calls_and_sends_what_botocore_sends(
    credentials: None,
) -> None:
    slim = ClientFactory(default_region="us-east-1").get("ec2")
    plain = botocore.session.get_session().create_client("ec2", region_name="us-east-1")
    assert set(slim.meta.service_model.operation_names) == OPERATIONS["ec2"]
    assert len(plain.meta.service_model.operation_names) > 10 * len(OPERATIONS["ec2"])
    assert slim.exceptions.ClientError is plain.exceptions.ClientError
    answer = EC2_XML + b"<DescribeInstancesResponse><reservationSet/></DescribeInstancesResponse>"
    filters = [{"Name": "instance-type", "Values": ["g5.*"]}, {"Name": "instance-state-name", "Values": ["running"]}]
    asked = []
    for client in (slim, plain):
        sent = _answering(client, answer)
        pages = client.get_paginator("describe_instances").paginate(
            Filters=filters, PaginationConfig={"PageSize": 1000}
        )
        assert [page["Reservations"] for page in pages] == [[]]
        asked.append(sent)
    assert asked[0] == asked[1] == [("DescribeInstances", asked[1][0][1])]
    assert "Filter.1.Name=instance-type" in asked[0][0][1]


def test_a_slim_dynamodb_client_keeps_every_error_class_of_the_full_model(credentials: None) -> None:
    slim = ClientFactory(default_region="us-east-1").get("dynamodb")
    plain = botocore.session.get_session().create_client("dynamodb", region_name="us-east-1")
    names = [shape.name for shape in plain.meta.service_model.error_shapes]
    assert "ConditionalCheckFailedException" in names
    assert sorted(shape.name for shape in slim.meta.service_model.error_shapes) == sorted(names)
    assert slim.exceptions.TransactionCanceledException.__name__ == "TransactionCanceledException"


def test_an_operation_outside_the_slim_model_is_sent_by_a_full_client_made_once(
    credentials: None, full_session: Any
) -> None:
    slim = ClientFactory(default_region="eu-west-1").get("ec2", quick=True)
    assert "DescribeRegions" not in slim.meta.service_model.operation_names
    sent = _answering(full_session, EC2_XML + b"<DescribeRegionsResponse><regionInfo/></DescribeRegionsResponse>")
    assert slim.describe_regions(AllRegions=True)["Regions"] == []
    assert slim.describe_regions()["Regions"] == []
    assert [operation for operation, _ in sent] == ["DescribeRegions", "DescribeRegions"]
    assert "AllRegions=true" in sent[0][1]
    full = slim.__dict__["_costguard_full"]  # one full client, of the slim one's region and configuration
    assert full.meta.region_name == "eu-west-1"
    assert full.meta.config.read_timeout == slim.meta.config.read_timeout == 10  # the quick client's
    assert full.meta.config.retries == {"mode": "standard", "total_max_attempts": 4}  # botocore's words for 3 retries
    assert len(full.meta.service_model.operation_names) > 100


def test_a_paginator_and_a_waiter_outside_the_slim_model_work_through_the_full_client(
    credentials: None, full_session: Any
) -> None:
    slim = ClientFactory(default_region="us-east-1").get("ec2")
    sent = _answering(
        full_session,
        EC2_XML + b"<DescribeImagesResponse><imagesSet><item><imageId>ami-1</imageId>"
        b"<imageState>available</imageState></item></imagesSet></DescribeImagesResponse>",
    )
    assert slim.can_paginate("describe_images")
    assert slim.can_paginate("describe_instances")
    assert not slim.can_paginate("stop_instances")
    images = [image["ImageId"] for page in slim.get_paginator("describe_images").paginate() for image in page["Images"]]
    assert images == ["ami-1"]
    slim.get_waiter("image_available").wait(ImageIds=["ami-1"], WaiterConfig={"Delay": 0, "MaxAttempts": 1})
    assert [operation for operation, _ in sent] == ["DescribeImages", "DescribeImages"]


def test_a_name_no_model_has_is_still_an_attribute_error(credentials: None, full_session: Any) -> None:
    slim = ClientFactory(default_region="us-east-1").get("ec2")
    with pytest.raises(AttributeError):
        slim.describe_everything()
    with pytest.raises(AttributeError):
        slim._not_a_thing  # noqa: B018  # private names never reach for the full client


def test_botocore_files_are_read_into_plain_dicts_holding_what_botocore_reads() -> None:
    data = Path(botocore.__file__).parent / "data"
    for name in ("endpoints", "partitions", "ec2/2016-11-15/paginators-1", "sdk-default-configuration"):
        plain, botocores = (
            PlainJSONFileLoader().load_file(str(data / name)),
            JSONFileLoader().load_file(str(data / name)),
        )
        assert type(plain) is dict
        assert type(botocores) is OrderedDict
        assert json.dumps(plain) == json.dumps(botocores)  # the same keys, values and order
    assert PlainJSONFileLoader().load_file(str(data / "no-such-file")) is None


def test_a_session_loads_its_endpoints_as_plain_dicts(credentials: None) -> None:
    session = new_session()
    session.client("sqs", region_name="eu-west-1")
    loader = session._session.get_component("data_loader")
    endpoints, _ = loader.load_data_with_path("endpoints")
    assert type(endpoints) is dict
    assert type(endpoints["partitions"][0]["services"]["ec2"]) is dict


def test_the_bulk_serializer_writes_the_bodies_botocore_writes_with_plain_lists_taken_as_given() -> None:
    model = botocore.session.get_session().get_service_model("cloudwatch")
    by_id = [{"Name": "InstanceId", "Value": "i-1"}, {"Name": "index", "Value": "0"}]
    metric = {"Namespace": "CWAgent", "MetricName": "nvidia_smi_utilization_gpu", "Dimensions": by_id}
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 15, tzinfo=UTC)
    requests: dict[str, dict[str, Any]] = {
        "GetMetricData": {
            "MetricDataQueries": [
                {"Id": f"q{i}", "MetricStat": {"Metric": metric, "Period": 3600, "Stat": "Maximum"}, "ReturnData": True}
                for i in range(3)
            ],
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        },
        "ListMetrics": {"Namespace": "CWAgent", "Dimensions": [{"Name": "InstanceId"}], "RecentlyActive": "PT3H"},
        # timestamps and doubles in the list's items: botocore's own walk, item by item
        "PutMetricData": {
            "Namespace": "costguard",
            "MetricData": [{"MetricName": "Stops", "Timestamp": start, "Value": float("inf"), "Dimensions": by_id}],
        },
    }
    for operation, params in requests.items():
        shape = model.operation_model(operation)
        fast = PlainJSONSerializer().serialize_to_request(params, shape)
        slow = JSONSerializer().serialize_to_request(params, shape)
        assert fast["body"] == slow["body"], operation
        assert fast["headers"] == slow["headers"]
    put_shape = model.operation_model("PutMetricData")
    put = json.loads(PlainJSONSerializer().serialize_to_request(requests["PutMetricData"], put_shape)["body"])
    assert put["MetricData"][0]["Timestamp"] == int(start.timestamp())
    assert put["MetricData"][0]["Value"] == "Infinity"
    # the queries are taken as given, where botocore walks each down its shape (and stops at a key it lacks)
    odd = {**requests["GetMetricData"], "MetricDataQueries": [{"Id": "q0", "Unmodelled": 1}]}
    assert (
        b'"Unmodelled": 1'
        in PlainJSONSerializer().serialize_to_request(odd, model.operation_model("GetMetricData"))["body"]
    )
    with pytest.raises(KeyError):
        JSONSerializer().serialize_to_request(odd, model.operation_model("GetMetricData"))


def test_only_the_bulk_client_serializes_plain_lists_as_given(credentials: None) -> None:
    factory = ClientFactory(default_region="us-east-1")
    assert type(factory.get("cloudwatch", bulk=True)._serializer) is PlainJSONSerializer
    assert type(factory.get("cloudwatch")._serializer) is not PlainJSONSerializer  # checked, then botocore's
