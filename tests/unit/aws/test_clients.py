"""costguard's boto3 session parses answers as botocore does, only faster where answers are large."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session
from botocore.parsers import JSONParser
from botocore.utils import parse_timestamp

from costguard.aws.clients import ResponseParsers, ScalarListsJSONParser, fast_timestamp, new_session


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
