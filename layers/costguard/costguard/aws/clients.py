"""boto3 clients, made once per service and region per Lambda container.

Adaptive retries: the client backs off on throttling (CloudTrail LookupEvents allows 2 calls per
second, CloudWatch GetMetricData 50) instead of failing the run. The endpoint is boto3's own
business: AWS_ENDPOINT_URL points every client at the local emulated account in the demo.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import JSONFileLoader, Loader
from botocore.parsers import JSONParser, ResponseParserFactory
from botocore.serialize import JSONSerializer
from botocore.utils import parse_timestamp

from costguard.aws.operations import OPERATIONS
from costguard.core.observability import logger

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


class PlainJSONSerializer(JSONSerializer):
    """botocore's JSON serializer, with a list whose items hold nothing to convert put in the body as given.

    botocore walks every value of a request down its shape, one call per node, to copy it into the body; for
    strings, integers, booleans, and lists and structures of them without renamed members, the copy is the
    value itself, which json.dumps reads as it is. A GetMetricData call of 300 queries is 3,000 nodes. Lists
    holding timestamps, blobs, floats, maps or renamed members are serialized by botocore, item by item. Used
    by the bulk clients only: their requests are built by costguard and not checked against the model, so a
    key the model lacks goes out as given, where botocore's walk would stop at it.
    """

    PLAIN_TYPES = frozenset({"string", "integer", "long", "boolean"})

    def __init__(self) -> None:
        super().__init__()
        self._plain: dict[int, tuple[Any, bool]] = {}  # by shape (kept, so that its id stays its own)

    def _serialize_type_list(self, serialized: Any, value: Any, shape: Any, key: Any) -> None:
        if self._is_plain(shape.member, set()):
            serialized[key] = value
        else:
            super()._serialize_type_list(serialized, value, shape, key)  # type: ignore[misc]

    def _is_plain(self, shape: Any, seen: set[int]) -> bool:
        known = self._plain.get(id(shape))
        if known is not None:
            return bool(known[1])
        if id(shape) in seen:  # a shape that holds itself: left to botocore
            return False
        seen.add(id(shape))
        kind = shape.type_name
        if kind in self.PLAIN_TYPES:
            plain = True
        elif kind == "list":
            plain = self._is_plain(shape.member, seen)
        elif kind == "structure" and not shape.is_document_type:
            members = shape.members.values()
            plain = all("name" not in m.serialization and self._is_plain(m, seen) for m in members)
        else:
            plain = False
        self._plain[id(shape)] = (shape, plain)
        return plain


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
    """botocore's loader of service models, each model's documentation dropped as it is loaded, and the
    models of the services in `slim` cut down to the operations named there (`slim_model`).

    A client keeps its service's whole model for the container's life, and the words of the API reference
    are much of it: they only make docstrings (help(client.method)), never a request or the reading of an
    answer. The eleven clients of the weekly digest held about 44 MB of models with them, 37 without.
    """

    def __init__(self, *args: Any, slim: Mapping[str, frozenset[str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slim = dict(slim or {})
        self._slim_models: dict[tuple[str, str | None], Any] = {}

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        if type_name == "service-2" and (service_name, api_version) in self._slim_models:
            return self._slim_models[service_name, api_version]
        model = super().load_service_model(service_name, type_name, api_version)
        if type_name != "service-2":  # the model itself (not its paginators, waiters or endpoint rules)
            return model
        _without_documentation(model)
        if service_name not in self._slim:
            return model
        slim = self._slim_models[service_name, api_version] = slim_model(model, self._slim[service_name])
        # botocore's loader caches what it loaded (the model, and the file's data with its path): the full
        # model would stay for the container's life.
        cache = getattr(self, "_cache", {})
        for key in [key for key, value in cache.items() if value is model or _holds(value, model)]:
            del cache[key]
        return slim


def _holds(value: Any, model: Any) -> bool:
    return isinstance(value, tuple) and any(item is model for item in value)


def slim_model(model: dict[str, Any], operations: frozenset[str]) -> dict[str, Any]:
    """A service model with only `operations` (those the model has), the operation that discovers
    endpoints, and the shapes they reach; every error shape is kept, so `client.exceptions` is whole.

    What is kept is copied, so that the full model, once dropped, frees its memory whole."""
    kept = {
        name: operation
        for name, operation in model.get("operations", {}).items()
        if name in operations or operation.get("endpointoperation")
    }
    shapes = model.get("shapes", {})
    todo = [name for name, shape in shapes.items() if shape.get("exception")]
    for operation in kept.values():
        todo += [operation[part]["shape"] for part in ("input", "output") if part in operation]
        todo += [error["shape"] for error in operation.get("errors", ())]
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        shape = shapes[name]
        todo += [member["shape"] for member in shape.get("members", {}).values()]
        todo += [shape[part]["shape"] for part in ("member", "key", "value") if part in shape]
    slim = {key: value for key, value in model.items() if key not in ("operations", "shapes")}
    slim["operations"] = kept
    slim["shapes"] = {name: shape for name, shape in shapes.items() if name in reached}
    return copy.deepcopy(slim)


class PlainJSONFileLoader(JSONFileLoader):
    """botocore's reader of its JSON files, into plain dicts where botocore makes OrderedDicts.

    A dict keeps its keys' order as an OrderedDict does, in less memory: botocore's table of endpoints, which
    every session keeps, is 4.1 MB in dicts and 7.0 MB in OrderedDicts on the dev machine."""

    def _load_file(self, full_path: str, open_method: Any) -> Any:
        if not os.path.isfile(full_path):
            return None
        with open_method(full_path, "rb") as fp:
            return json.loads(fp.read().decode("utf-8"))


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


def new_session(*, slim: bool = True) -> boto3.session.Session:
    """costguard's boto3 session: fast answers, models without documentation and, unless `slim` is False,
    the large services' models cut to the operations costguard calls (aws/operations.py), each client of
    such a service falling back to the full model for any other operation (`FullOnDemand`)."""
    core = botocore.session.get_session()
    core.register_component("response_parser_factory", ResponseParsers())
    # where botocore's own loader looks (AWS_DATA_PATH and the bundled models), as botocore.loaders.create_loader
    data_path = core.get_config_variable("data_path")
    extra = [os.path.expanduser(os.path.expandvars(p)) for p in data_path.split(os.pathsep)] if data_path else None
    loader = LeanLoader(extra_search_paths=extra, file_loader=PlainJSONFileLoader(), slim=OPERATIONS if slim else None)
    core.register_component("data_loader", loader)
    if slim:
        core.register("creating-client-class", _full_on_demand)
    return boto3.session.Session(botocore_session=core)


def _full_on_demand(**event: Any) -> None:
    event["base_classes"].insert(0, FullOnDemand)


_full_lock = threading.Lock()
_full_sessions: list[boto3.session.Session] = []


class FullOnDemand:
    """What a client of a slim session adds to botocore's: an operation, paginator or waiter its slim
    model lacks is handed to a client of the full model, made once (the first time) with the same region
    and configuration. A name costguard forgot to list in aws/operations.py costs memory, never a call."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # type: ignore[misc]  # botocore's BaseClient, next in line
        except AttributeError:
            full = None if name.startswith("_") else self._full_client(name)
            if full is None:
                raise
            return getattr(full, name)

    def can_paginate(self, operation_name: str) -> bool:
        if operation_name in self._PY_TO_OP_NAME:
            return bool(super().can_paginate(operation_name))  # type: ignore[misc]
        full = self._full_client(operation_name)
        return bool(full.can_paginate(operation_name)) if full is not None else False

    def get_paginator(self, operation_name: str) -> Any:
        full = None if operation_name in self._PY_TO_OP_NAME else self._full_client(operation_name)
        if full is None:
            return super().get_paginator(operation_name)  # type: ignore[misc]
        return full.get_paginator(operation_name)

    _PY_TO_OP_NAME: dict[str, str]  # botocore's, set on the client class: the slim model's operations
    meta: Any

    def _full_client(self, asked: str) -> Any:
        """The full model's client of this one's service, region and configuration; None for a service
        that is not slimmed (its model is whole: nothing more to find)."""
        service = self.meta.service_model.service_name
        if service not in OPERATIONS:
            return None
        with _full_lock:
            full = self.__dict__.get("_costguard_full")
            if full is None:
                logger.warning("operation outside the slim model: full client made", service=service, asked=asked)
                if not _full_sessions:
                    _full_sessions.append(new_session(slim=False))
                full = _full_sessions[0].client(service, region_name=self.meta.region_name, config=self.meta.config)
                self.__dict__["_costguard_full"] = full
        return full


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
                if bulk and type(getattr(client, "_serializer", None)) is JSONSerializer:
                    client._serializer = PlainJSONSerializer()  # no parameter check to wrap: botocore's own
                self._clients[key] = client
            return client

    def use(self, service: str, region: str, client: Any) -> None:
        """Hand out `client` for this service and region, whichever kind is asked for (a stand-in's, in a
        simulation: no kind may reach past it to a real endpoint)."""
        with self._lock:
            for kind in (service, f"{service}:quick", f"{service}:bulk"):
                self._clients[(kind, region)] = client
