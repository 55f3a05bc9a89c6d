"""boto3 clients, made once per service and region per Lambda container.

Adaptive retries: the client backs off on throttling (CloudTrail LookupEvents allows 2 calls per
second, CloudWatch GetMetricData 50) instead of failing the run. The endpoint is boto3's own
business: AWS_ENDPOINT_URL points every client at the local emulated account in the demo.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import Loader
from botocore.parsers import JSONParser, ResponseParserFactory
from botocore.utils import parse_timestamp

# Cost Explorer, Savings Plans and the Pricing API answer from this region, whatever the fleet's.
GLOBAL_ENDPOINT_REGION = "us-east-1"

RETRY_CONFIG = Config(
    retries={"mode": "adaptive", "max_attempts": 10},
    user_agent_extra="costguard",
    connect_timeout=5,
    read_timeout=30,
)


# For reads a message can go without (a budget alert's breakdown): a few quick tries, so that a
# throttling storm costs the message its breakdown, not the message.
QUICK_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    user_agent_extra="costguard",
    connect_timeout=3,
    read_timeout=10,
)


# For the bulk reads whose every request costguard builds itself (the weekly digest's ListMetrics and
# GetMetricData): botocore's check of each parameter against the model cost about 10 ms of every 300-query
# GetMetricData call on the dev machine, some 2.4 s of CPU over the 240 calls of a 10,000-machine fleet.
BULK_CONFIG = RETRY_CONFIG.merge(Config(parameter_validation=False))


# What an optional read may raise: an AWS error, a transport error after the retries, or (moto in
# tests and the demo) an operation the emulator does not implement. Callers that can go on without
# the answer catch these and say what was missing.
READ_ERRORS = (ClientError, BotoCoreError, NotImplementedError)


def error_code(exc: BaseException) -> str:
    """The AWS error code of a failed call (AccessDeniedException, ...), else the exception's name."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "error"))
    return type(exc).__name__


def utc_time(value: Any) -> datetime:
    """A time an AWS answer gave, as boto3 parsed it or as ISO 8601 text: aware, a naive one taken as UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def fast_timestamp(value: Any) -> datetime:
    """botocore's timestamp parser, made fast for the epoch numbers JSON services send and the UTC ISO
    8601 times XML services send.

    botocore builds each datetime with dateutil's tzutc: 7.5 µs apiece on the dev machine against
    0.4 µs with the stdlib's UTC, for equal datetimes; a sweep of 10,000 instances reads 1.7 million
    CloudWatch timestamps. An ISO time ending in Z (EC2's launch times) is read by the standard library,
    without dateutil's parser and a tzinfo object of its own per time; any other form goes to botocore.
    """
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value[-1:] == "Z" and value[:4].isdigit():
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return parse_timestamp(value)


class ScalarListsJSONParser(JSONParser):
    """botocore's JSON parser, with a list of timestamps or of plain values read in one pass.

    The generic parser looks up a handler for every item of every list: a GetMetricData answer is
    100,000 timestamps and 100,000 values, and a weekly digest of 10,000 machines reads 18 million of
    each. The timestamps of one answer are a few hundred distinct hours, each made into a datetime once
    (datetimes cannot change: sharing one is safe). 15 ms an answer instead of 95 on the dev machine.
    Lists of anything else, and of types the parser converts, take botocore's own path.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._moments: dict[Any, datetime] = {}  # this answer's timestamps, as read (a parser reads one)

    def _moment(self, value: Any) -> datetime | None:
        if value is None:
            return None
        moment = self._moments[value] = fast_timestamp(value)  # the parser is made with it (ResponseParsers)
        return moment

    def _handle_list(self, shape: Any, node: Any) -> Any:
        kind = shape.member.type_name
        if kind == "timestamp":
            known, read = self._moments.get, self._moment
            return [known(item) or read(item) for item in node]
        if getattr(type(self), f"_handle_{kind}", None) is None:
            return list(node)  # what the default handler would return, item by item
        return super()._handle_list(shape, node)  # type: ignore[misc]  # botocore's stubs omit it


class ResponseParsers(ResponseParserFactory):
    """botocore's parsers, with fast timestamps, and lists of scalars read in one pass in JSON answers."""

    def __init__(self) -> None:
        super().__init__()
        self.set_parser_defaults(timestamp_parser=fast_timestamp)

    def create_parser(self, protocol_name: str) -> Any:
        if protocol_name == "json":
            return ScalarListsJSONParser(timestamp_parser=fast_timestamp)
        return super().create_parser(protocol_name)


class LeanLoader(Loader):
    """botocore's loader of service models, each model's documentation dropped as it is loaded.

    A client keeps its service's whole model for the container's life, and the words of the API reference
    are much of it: they only make docstrings (help(client.method)), never a request or the reading of an
    answer. The eleven clients of the weekly digest held about 44 MB of models with them, 37 without.
    """

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        model = super().load_service_model(service_name, type_name, api_version)
        if type_name == "service-2":  # the model itself (not its paginators, waiters or endpoint rules)
            _without_documentation(model)
        return model


def _without_documentation(model: dict[str, Any]) -> None:
    model.get("metadata", {}).pop("documentation", None)
    model.pop("documentation", None)
    for operation in model.get("operations", {}).values():
        operation.pop("documentation", None)
        operation.pop("documentationUrl", None)
    for shape in model.get("shapes", {}).values():
        shape.pop("documentation", None)
        for member in shape.get("members", {}).values():
            member.pop("documentation", None)


def new_session() -> boto3.session.Session:
    core = botocore.session.get_session()
    core.register_component("response_parser_factory", ResponseParsers())
    # where botocore's own loader looks (AWS_DATA_PATH and the bundled models), as botocore.loaders.create_loader
    data_path = core.get_config_variable("data_path")
    extra = [os.path.expanduser(os.path.expandvars(p)) for p in data_path.split(os.pathsep)] if data_path else None
    core.register_component("data_loader", LeanLoader(extra_search_paths=extra))
    return boto3.session.Session(botocore_session=core)


class ClientFactory:
    """Hands out one client per (service, region); thread-safe, cached for the container's life."""

    def __init__(self, session: boto3.session.Session | None = None, default_region: str | None = None) -> None:
        self._session = session
        self._default_region = default_region
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def get(self, service: str, region: str | None = None, *, quick: bool = False, bulk: bool = False) -> Any:
        """The client of a service and region; `quick`: one with few retries and short timeouts; `bulk`: one
        that does not check its requests' parameters (for requests costguard builds itself, in bulk)."""
        region = region or self._default_region
        key = (f"{service}:quick" if quick else f"{service}:bulk" if bulk else service, region)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                # boto3.Session() is not thread-safe to create clients from concurrently: keep it in the lock.
                session = self._session or new_session()
                self._session = session
                config = QUICK_CONFIG if quick else BULK_CONFIG if bulk else RETRY_CONFIG
                client = session.client(service, region_name=region, config=config)  # type: ignore[call-overload]
                self._clients[key] = client
            return client

    def use(self, service: str, region: str, client: Any) -> None:
        """Hand out `client` for this service and region, whichever kind is asked for (a stand-in's, in a
        simulation: no kind may reach past it to a real endpoint)."""
        with self._lock:
            for kind in (service, f"{service}:quick", f"{service}:bulk"):
                self._clients[(kind, region)] = client
