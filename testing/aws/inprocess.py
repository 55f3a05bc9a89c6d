"""The stand-ins called in process, as boto3's client would call AWS: a refusal (ApiError) becomes the
ClientError subclass `client.exceptions` names, with AWS's error shape; a paginator follows NextToken;
CloudWatch's datetimes go over as epoch seconds and come back as datetimes, as on the wire."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from testing.aws.errors import ApiError


@cache
def error_class(code: str) -> type[Exception]:
    """The ClientError subclass botocore raises for `code` (one class per code, as client.exceptions has)."""
    from botocore.exceptions import ClientError  # noqa: PLC0415 (the importing process's botocore)

    return type(code, (ClientError,), {})


def client_error(exc: ApiError, operation: str) -> Exception:
    response: dict[str, Any] = {
        "Error": {"Code": exc.code, "Message": exc.message},
        "ResponseMetadata": {"HTTPStatusCode": exc.status},
        **exc.extra,
    }
    return error_class(exc.code)(response, operation)


class Exceptions:
    """`client.exceptions`: any error code AWS names, as its ClientError subclass."""

    def __getattr__(self, code: str) -> type[Exception]:
        if code.startswith("_"):
            raise AttributeError(code)
        return error_class(code)


def calling(operation: str, method: Callable[[dict[str, Any]], Any]) -> Callable[..., Any]:
    """`method` (which takes the request's parameters as one mapping) called as boto3 calls: keywords in,
    ApiError out as ClientError."""

    def call(**params: Any) -> Any:
        try:
            return method(params)
        except ApiError as exc:
            raise client_error(exc, operation) from None

    return call


def paginate(
    call: Callable[..., dict[str, Any]], params: Mapping[str, Any], token: str = "NextToken"
) -> Iterator[dict[str, Any]]:
    """Every page, following the answer's token as boto3's paginator does."""
    page = call(**params)
    yield page
    while page.get(token):
        page = call(**{**params, token: page[token]})
        yield page


def epoch(value: Any) -> Any:
    """A datetime as CloudWatch's wire carries it (epoch seconds); other values as they are."""
    return value.timestamp() if isinstance(value, datetime) else value


def moment(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def cloudwatch_in(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: epoch(v) for k, v in params.items()}


def metric_data_out(answer: dict[str, Any]) -> dict[str, Any]:
    for result in answer.get("MetricDataResults", []):
        result["Timestamps"] = [moment(t) for t in result["Timestamps"]]
    return answer
