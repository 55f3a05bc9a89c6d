"""EC2 over a world's fleet, for the week (in process), the benchmarks' and the digest's endpoints and the demo's
gap proxy (the query protocol and its XML): the one EC2 stand-in, at least as strict as EC2 about what
costguard sends.

Kept as EC2 keeps them: DescribeInstances filtered by instance-state-name, instance-type, instance-id,
instance-lifecycle, availability-zone, tag:KEY, tag-key and tag-value (wildcards `*` and `?`), any other
filter refused; MaxResults 5 to 1,000 instances a page (paged by instance, not by reservation), never with
InstanceIds; an id that names no instance refused (InvalidInstanceID.NotFound) and a malformed one too.
CreateTags and DeleteTags on 1 to 1,000 resources (EC2's documented constraint), at most 50 tags a
resource, keys of 128 and values of 256 characters, no `aws:` key. StopInstances refuses an
instance-store root, a one-time Spot instance, Hibernate where hibernation is not configured, and a
machine that is not running, stopping or stopped; every instance is checked before any is stopped.
StartInstances refuses a machine that is stopping or gone. DescribeReservedInstances,
DescribeSpotPriceHistory (1 to 1,000 a page) and DescribeCapacityReservations (1 to 1,000 a page) answer
the world's records, filtered as EC2 filters them. A parameter the operation does not have is refused
(UnknownParameter), as is one botocore's own validation would stop.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any
from xml.sax.saxutils import escape

from testing.aws.errors import ApiError, unsupported

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}
PAGE_MIN, PAGE_MAX = 5, 1000  # DescribeInstances
HISTORY_PAGE_MAX = 1000  # DescribeSpotPriceHistory, DescribeCapacityReservations (at least 1)
MAX_TAG_RESOURCES = 1000
MAX_TAGS = 50
MAX_KEY, MAX_VALUE = 128, 256
INSTANCE_ID = re.compile(r"^i-([0-9a-f]{8}|[0-9a-f]{17})$")


@dataclass
class Ec2Instance:
    """One machine as DescribeInstances tells it. `tags` is the world's own dictionary: CreateTags and
    DeleteTags write to it. A field left None is not in the answer (each world tells what it knows)."""

    instance_id: str
    instance_type: str
    state: str
    launch_time: datetime | str
    tags: dict[str, str]
    root_device_type: str = "ebs"
    lifecycle: str = ""  # "spot" for a Spot instance
    spot_request_type: str = "persistent"  # of a Spot instance: "one-time" ones cannot be stopped
    spot_request_id: str | None = None
    hibernation_configured: bool | None = None
    zone: str | None = None
    private_dns_name: str | None = None
    platform: str | None = None
    cpu: tuple[int, int] | None = None  # (cores, threads per core)
    volume_id: str | None = None  # the root volume's, attached at launch
    state_reason: str | None = None
    reservation_id: str | None = None  # None: the page's instances in one reservation
    owner_id: str | None = None
    image_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # any other field, as boto3 names it


class Ec2World:
    """What a world tells EC2: its machines now, and what a stop or a start does to them. The records
    (Reserved Instances, capacity reservations) are boto3's shapes; a Spot price is (type, zone, USD/h)."""

    def instances(self) -> Sequence[Ec2Instance]:
        return []

    def stop(self, instance_id: str, hibernate: bool) -> None:
        """EC2 stops this machine (asked of one running, stopping or stopped: the world keeps it as it is)."""
        raise unsupported("StopInstances in this world")

    def start(self, instance_id: str) -> None:
        """EC2 starts this machine (asked of one stopped, pending or running)."""
        raise unsupported("StartInstances in this world")

    def reserved_instances(self) -> Sequence[Mapping[str, Any]]:
        return []

    def capacity_reservations(self) -> Sequence[Mapping[str, Any]]:
        return []

    def spot_prices(self, instance_types: Sequence[str]) -> Iterable[tuple[str, str, float]]:
        return []

    def now(self) -> datetime:
        return datetime.now(UTC)


def _invalid(message: str) -> ApiError:
    return ApiError("InvalidParameterValue", message)


class Ec2:
    def __init__(self, world: Ec2World, region: str = "us-east-1") -> None:
        self.world = world
        self.region = region
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ instances
    def _by_id(self) -> dict[str, Ec2Instance]:
        return {i.instance_id: i for i in self.world.instances()}

    def _known(self, ids: Sequence[str], by_id: Mapping[str, Ec2Instance]) -> list[Ec2Instance]:
        malformed = [i for i in ids if not INSTANCE_ID.match(i)]
        if malformed:
            raise ApiError("InvalidInstanceID.Malformed", f'Invalid id: "{malformed[0]}"')
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ApiError("InvalidInstanceID.NotFound", f"The instance IDs '{', '.join(missing)}' do not exist")
        return [by_id[i] for i in ids]

    def describe_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("DescribeInstances", params)
        ids = list(params.get("InstanceIds") or [])
        if ids and "MaxResults" in params:
            raise ApiError("InvalidParameterCombination", "The parameter instancesSet cannot be used with maxResults")
        size = params.get("MaxResults")
        if size is not None and not PAGE_MIN <= size <= PAGE_MAX:
            raise _invalid(f"Value ( {size} ) for parameter maxResults is invalid: {PAGE_MIN} to {PAGE_MAX}.")
        tests = [self._filter(f["Name"], list(f.get("Values") or [])) for f in params.get("Filters") or []]
        with self._lock:
            fleet = self.world.instances()
            chosen = self._known(ids, {i.instance_id: i for i in fleet}) if ids else fleet
            matched = [i for i in chosen if all(test(i) for test in tests)]
            start = _token(params.get("NextToken"))
            end = len(matched) if size is None else start + size
            page = [(i, _instance(i)) for i in matched[start:end]]
        answer: dict[str, Any] = {"Reservations": _reservations(page)}
        if end < len(matched):
            answer["NextToken"] = str(end)
        return answer

    def _filter(self, name: str, values: list[str]) -> Callable[[Ec2Instance], bool]:
        def matches(actual: str | None) -> bool:
            return actual is not None and any(fnmatch.fnmatchcase(actual, v) for v in values)

        simple: dict[str, Callable[[Ec2Instance], str | None]] = {
            "instance-state-name": lambda i: i.state,
            "instance-type": lambda i: i.instance_type,
            "instance-id": lambda i: i.instance_id,
            "instance-lifecycle": lambda i: i.lifecycle or None,
            "availability-zone": lambda i: i.zone,
        }
        if name in simple:
            attribute = simple[name]
            return lambda i: matches(attribute(i))
        if name.startswith("tag:"):
            key = name[4:]
            return lambda i: key in i.tags and matches(i.tags[key])
        if name == "tag-key":
            return lambda i: any(matches(k) for k in i.tags)
        if name == "tag-value":
            return lambda i: any(matches(v) for v in i.tags.values())
        raise _invalid(f"The filter '{name}' is invalid")

    # ------------------------------------------------------------------ tags
    def create_tags(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("CreateTags", params)
        pairs = [(t["Key"], t.get("Value", "")) for t in params["Tags"]]
        for key, value in pairs:
            if not key or len(key) > MAX_KEY or len(value) > MAX_VALUE:
                raise _invalid(f"Tag key of 1 to {MAX_KEY} and value of at most {MAX_VALUE} characters: {key!r}")
            if key.lower().startswith("aws:"):
                raise _invalid(f"Tag keys starting with 'aws:' are reserved for internal use: {key}")
        if len({k for k, _ in pairs}) < len(pairs):
            raise _invalid("Duplicate tag key in one request")
        with self._lock:
            chosen = self._resources(params)
            for instance in chosen:
                if len(instance.tags.keys() | {k for k, _ in pairs}) > MAX_TAGS:
                    raise ApiError("TagLimitExceeded", f"The maximum number of tags ({MAX_TAGS}) has been reached")
            for instance in chosen:
                instance.tags.update(pairs)
        return {}

    def delete_tags(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("DeleteTags", params)
        with self._lock:
            for instance in self._resources(params):
                if "Tags" not in params:  # no tags named: every tag of the resource (EC2's documented default)
                    instance.tags.clear()
                for tag in params.get("Tags") or []:
                    key = tag["Key"]
                    if key in instance.tags and ("Value" not in tag or instance.tags[key] == tag["Value"]):
                        del instance.tags[key]
        return {}

    def _resources(self, params: Mapping[str, Any]) -> list[Ec2Instance]:
        ids = list(params["Resources"])
        if not 1 <= len(ids) <= MAX_TAG_RESOURCES:
            raise _invalid(f"{len(ids)} resource IDs: 1 to {MAX_TAG_RESOURCES} per call")
        others = [i for i in ids if not i.startswith("i-")]
        if others:
            raise unsupported(f"tags on {others[0]} (the stand-in's resources are instances)")
        return self._known(ids, self._by_id())

    # ------------------------------------------------------------------ stop and start
    def stop_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("StopInstances", params)
        hibernate = bool(params.get("Hibernate"))
        out = []
        with self._lock:
            chosen = self._known(list(params["InstanceIds"]), self._by_id())
            for i in chosen:  # every instance checked before any is stopped, as EC2 does
                if i.root_device_type != "ebs":
                    raise ApiError(
                        "UnsupportedOperation",
                        f"The instance '{i.instance_id}' does not have an 'ebs' root device type and cannot be stopped",
                    )
                if i.lifecycle == "spot" and i.spot_request_type == "one-time":
                    raise ApiError(
                        "UnsupportedOperation",
                        f"The instance '{i.instance_id}' is a one-time Spot Instance and cannot be stopped.",
                    )
                if hibernate and not i.hibernation_configured:
                    raise ApiError(
                        "UnsupportedHibernationConfiguration",
                        f"The instance '{i.instance_id}' is not configured for hibernation.",
                    )
                if i.state not in ("running", "stopping", "stopped"):
                    raise ApiError(
                        "IncorrectInstanceState",
                        f"The instance '{i.instance_id}' is not in a state from which it can be stopped.",
                    )
            for i in chosen:  # the world is told of each (one already stopped stays as it is)
                before = i.state
                self.world.stop(i.instance_id, hibernate)
                out.append(_change(i.instance_id, before, "stopping" if before == "running" else before))
        return {"StoppingInstances": out}

    def start_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("StartInstances", params)
        out = []
        with self._lock:
            chosen = self._known(list(params["InstanceIds"]), self._by_id())
            for i in chosen:
                if i.state not in ("pending", "running", "stopped"):
                    raise ApiError(
                        "IncorrectInstanceState", f"The instance '{i.instance_id}' is not in a state to be started."
                    )
            for i in chosen:  # the world is told of each (one already running stays as it is)
                before = i.state
                self.world.start(i.instance_id)
                out.append(_change(i.instance_id, before, "pending" if before == "stopped" else before))
        return {"StartingInstances": out}

    # ------------------------------------------------------------------ the bill's records
    def describe_reserved_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("DescribeReservedInstances", params)
        fields = {
            "state": "State",
            "instance-type": "InstanceType",
            "reserved-instances-id": "ReservedInstancesId",
            "availability-zone": "AvailabilityZone",
            "scope": "Scope",
            "product-description": "ProductDescription",
            "instance-tenancy": "InstanceTenancy",
        }
        rows = _filtered(self.world.reserved_instances(), params.get("Filters") or [], fields)
        ids = set(params.get("ReservedInstancesIds") or [])
        for key in ("OfferingClass", "OfferingType"):
            rows = [r for r in rows if key not in params or r.get(key) == params[key]]
        return {"ReservedInstances": [dict(r) for r in rows if not ids or r["ReservedInstancesId"] in ids]}

    def describe_capacity_reservations(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("DescribeCapacityReservations", params)
        size = params.get("MaxResults", HISTORY_PAGE_MAX)
        if not 1 <= size <= HISTORY_PAGE_MAX:
            raise _invalid(f"MaxResults {size}: 1 to {HISTORY_PAGE_MAX}")
        fields = {
            "state": "State",
            "instance-type": "InstanceType",
            "availability-zone": "AvailabilityZone",
            "reservation-type": "ReservationType",
            "capacity-reservation-id": "CapacityReservationId",
            "instance-platform": "InstancePlatform",
            "tenancy": "Tenancy",
        }
        rows = _filtered(self.world.capacity_reservations(), params.get("Filters") or [], fields)
        ids = set(params.get("CapacityReservationIds") or [])
        rows = [r for r in rows if not ids or r["CapacityReservationId"] in ids]
        return _paged("CapacityReservations", rows, _token(params.get("NextToken")), size)

    def describe_spot_price_history(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validate("DescribeSpotPriceHistory", params)
        size = params.get("MaxResults", HISTORY_PAGE_MAX)
        if not 1 <= size <= HISTORY_PAGE_MAX:
            raise _invalid(f"MaxResults {size}: 1 to {HISTORY_PAGE_MAX}")
        start, end = params.get("StartTime"), params.get("EndTime")
        if start is not None and end is not None and _moment(start) > _moment(end):
            raise _invalid("The start time must be before the end time")
        types = list(params.get("InstanceTypes") or [])
        descriptions = set(params.get("ProductDescriptions") or [])
        zone = params.get("AvailabilityZone")
        stamp = _moment(start) if start is not None else self.world.now()
        rows: list[Mapping[str, Any]] = [
            {
                "AvailabilityZone": z,
                "InstanceType": t,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": f"{price:.6f}",
                "Timestamp": stamp,
            }
            for t, z, price in self.world.spot_prices(types)
            if (not types or t in types) and z.startswith(self.region) and zone in (None, z)
        ]
        rows = [r for r in rows if not descriptions or r["ProductDescription"] in descriptions]
        fields = {"availability-zone": "AvailabilityZone", "instance-type": "InstanceType",
                  "product-description": "ProductDescription"}  # fmt: skip
        rows = _filtered(rows, params.get("Filters") or [], fields)
        answer = _paged("SpotPriceHistory", rows, _token(params.get("NextToken")), size)
        answer.setdefault("NextToken", "")  # EC2 answers an empty token on the last page
        return answer

    # ------------------------------------------------------------------ the wire (query protocol, XML)
    def query(self, form: Mapping[str, Any]) -> str:
        """One query-protocol request (its form, values as strings or lists of one string) answered in XML."""
        flat = {k: v[0] if isinstance(v, list) else v for k, v in form.items()}
        action = str(flat.get("Action", ""))
        method = OPERATIONS.get(action)
        if method is None:
            raise unsupported(f"EC2's {action or 'request without an Action'}")
        return xml_answer(action, method(self, query_params(action, flat)))


OPERATIONS: dict[str, Callable[[Ec2, Mapping[str, Any]], dict[str, Any]]] = {
    "DescribeInstances": Ec2.describe_instances,
    "CreateTags": Ec2.create_tags,
    "DeleteTags": Ec2.delete_tags,
    "StopInstances": Ec2.stop_instances,
    "StartInstances": Ec2.start_instances,
    "DescribeReservedInstances": Ec2.describe_reserved_instances,
    "DescribeCapacityReservations": Ec2.describe_capacity_reservations,
    "DescribeSpotPriceHistory": Ec2.describe_spot_price_history,
}


def _token(value: Any) -> int:
    if not value:
        return 0
    if not str(value).isdigit():
        raise _invalid(f"Invalid NextToken: {value}")
    return int(value)


def _paged(key: str, rows: Sequence[Any], start: int, size: int) -> dict[str, Any]:
    answer: dict[str, Any] = {key: list(rows[start : start + size])}
    if start + size < len(rows):
        answer["NextToken"] = str(start + size)
    return answer


def _filtered(
    rows: Iterable[Mapping[str, Any]], filters: Sequence[Mapping[str, Any]], fields: Mapping[str, str]
) -> list[Mapping[str, Any]]:
    out = list(rows)
    for f in filters:
        key = fields.get(f["Name"])
        if key is None:
            raise _invalid(f"The filter '{f['Name']}' is invalid")
        values = list(f.get("Values") or [])
        out = [r for r in out if any(fnmatch.fnmatchcase(str(r.get(key, "")), v) for v in values)]
    return out


def _change(instance_id: str, before: str, now: str) -> dict[str, Any]:
    return {
        "InstanceId": instance_id,
        "CurrentState": {"Code": STATE_CODES[now], "Name": now},
        "PreviousState": {"Code": STATE_CODES[before], "Name": before},
    }


def _instance(i: Ec2Instance) -> dict[str, Any]:
    out: dict[str, Any] = {"InstanceId": i.instance_id}
    if i.image_id is not None:
        out["ImageId"] = i.image_id
    out |= {
        "InstanceType": i.instance_type,
        "State": {"Code": STATE_CODES[i.state], "Name": i.state},
        "LaunchTime": i.launch_time,
    }
    optional: dict[str, Any] = {
        "StateTransitionReason": i.state_reason,
        "PrivateDnsName": i.private_dns_name,
        "Placement": {"AvailabilityZone": i.zone, "Tenancy": "default"} if i.zone is not None else None,
        "PlatformDetails": i.platform,
        "CpuOptions": {"CoreCount": i.cpu[0], "ThreadsPerCore": i.cpu[1]} if i.cpu else None,
        "HibernationOptions": None if i.hibernation_configured is None else {"Configured": i.hibernation_configured},
        "InstanceLifecycle": i.lifecycle or None,
        "SpotInstanceRequestId": i.spot_request_id,
    }
    out |= {k: v for k, v in optional.items() if v is not None}
    out["RootDeviceType"] = i.root_device_type
    if i.volume_id is not None:
        out["RootDeviceName"] = "/dev/xvda"
        ebs = {"VolumeId": i.volume_id, "Status": "attached", "AttachTime": i.launch_time, "DeleteOnTermination": True}
        out["BlockDeviceMappings"] = [{"DeviceName": "/dev/xvda", "Ebs": ebs}]
    out |= i.extra
    out["Tags"] = [{"Key": k, "Value": v} for k, v in i.tags.items()]
    return out


def _reservations(page: Sequence[tuple[Ec2Instance, dict[str, Any]]]) -> list[dict[str, Any]]:
    """A page's instances in their reservations (consecutive instances of one reservation together)."""
    out: list[dict[str, Any]] = []
    last: object = object()
    for instance, raw in page:
        if instance.reservation_id != last or not out:
            reservation: dict[str, Any] = {}
            if instance.reservation_id is not None:
                reservation["ReservationId"] = instance.reservation_id
            if instance.owner_id is not None:
                reservation["OwnerId"] = instance.owner_id
            reservation["Instances"] = []
            out.append(reservation)
            last = instance.reservation_id
        out[-1]["Instances"].append(raw)
    return out


def _moment(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# ---------------------------------------------------------------------- EC2's model, from botocore
@cache
def _model() -> Any:
    import botocore.session  # noqa: PLC0415 (the importing process's botocore, as in testing/aws/inprocess.py)

    return botocore.session.get_session().get_service_model("ec2")


def validate(operation: str, params: Mapping[str, Any]) -> None:
    """What botocore's client would refuse before sending (a missing required parameter, a wrong type, an
    unknown name), refused here too: the week calls the stand-in without botocore in between."""
    from botocore.validate import ParamValidator  # noqa: PLC0415

    report = ParamValidator().validate(dict(params), _model().operation_model(operation).input_shape)
    if report.has_errors():
        raise ApiError("ValidationError", report.generate_report())


def _query_name(shape: Any, default: str) -> str:
    if "queryName" in shape.serialization:
        return str(shape.serialization["queryName"])
    name = shape.serialization.get("name")
    return str(name[0].upper() + name[1:]) if name else default


def query_params(operation: str, form: Mapping[str, str]) -> dict[str, Any]:
    """A query-protocol form read back into boto3's parameters (botocore's EC2 serializer, inverted); a
    field the operation does not have is refused, as EC2 refuses it."""
    used: set[str] = {"Action", "Version"}
    params = _read(_model().operation_model(operation).input_shape, form, "", used)
    unknown = sorted(set(form) - used)
    if unknown:
        raise ApiError("UnknownParameter", f"The parameter {unknown[0]} is not recognized")
    return dict(params or {})


def _read(shape: Any, form: Mapping[str, str], prefix: str, used: set[str]) -> Any:
    kind = shape.type_name
    if kind == "structure":
        out = {}
        for name, member in shape.members.items():
            key = _query_name(member, name)
            value = _read(member, form, f"{prefix}.{key}" if prefix else key, used)
            if value is not None:
                out[name] = value
        return out or None
    if kind == "list":
        items = []
        for n in range(1, len(form) + 1):
            here = f"{prefix}.{n}"
            if not any(k == here or k.startswith(here + ".") for k in form):
                break
            items.append(_read(shape.member, form, here, used))
        return items or None
    if prefix not in form:
        return None
    used.add(prefix)
    text = form[prefix]
    try:
        if kind == "integer" or kind == "long":
            return int(text)
        if kind == "boolean":
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
        if kind == "timestamp":
            return _moment(text)
    except ValueError:
        raise _invalid(f"Value ({text}) for parameter {prefix} is invalid") from None
    return text


def xml_answer(operation: str, answer: Mapping[str, Any]) -> str:
    """An answer in EC2's XML, by the output shape's member names (botocore's parser reads it back)."""
    shape = _model().operation_model(operation).output_shape
    body = _xml(shape, answer) if shape is not None else ""
    return (
        f'<{operation}Response xmlns="{EC2_NS}"><requestId>00000000-0000-0000-0000-000000000000</requestId>'
        f"{body}</{operation}Response>"
    )


def _xml(shape: Any, value: Any) -> str:
    kind = shape.type_name
    if kind == "structure":
        members = shape.members
        unknown = set(value) - set(members)
        if unknown:
            raise ValueError(f"{shape.name} has no {sorted(unknown)}")  # the stand-in's own mistake
        parts = []
        for name, item in value.items():
            member = members[name]
            tag = member.serialization.get("name", name)
            parts.append(f"<{tag}>{_xml(member, item)}</{tag}>")
        return "".join(parts)
    if kind == "list":
        tag = shape.member.serialization.get("name", "item")
        return "".join(f"<{tag}>{_xml(shape.member, v)}</{tag}>" for v in value)
    if kind == "timestamp":
        if isinstance(value, datetime):
            return _moment(value).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return escape(str(value))
    if kind == "boolean":
        return "true" if value else "false"
    return escape(str(value))
