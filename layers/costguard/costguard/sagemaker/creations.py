"""CloudTrail records of SageMaker create calls, parsed: CreateNotebookInstance, CreateEndpoint, CreateApp.
Pure: no I/O.

The same record arrives as an EventBridge "AWS API Call via CloudTrail" event's detail (real time) and as a
LookupEvents result's CloudTrailEvent (the backfill). SageMaker's records name the resource in
requestParameters (notebookInstanceName; endpointName and endpointConfigName; domainId, userProfileName or
spaceName, appType, appName) and its ARN in responseElements (notebookInstanceArn, endpointArn, appArn).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.ownership import Identity, lookup_record, parse_identity
from costguard.core.records import Skipped
from costguard.core.sagemaker import GOVERNED_APP_TYPES, Kind, check_key

SOURCE = "sagemaker.amazonaws.com"
EVENTS = {"CreateNotebookInstance": Kind.NOTEBOOK, "CreateEndpoint": Kind.ENDPOINT, "CreateApp": Kind.APP}


@dataclass(frozen=True)
class Creation:
    """A successful SageMaker create call: who made it, when, and what it made."""

    event_id: str
    event_time: datetime
    region: str
    identity: Identity
    kind: Kind
    name: str  # as core.sagemaker names it (an app: <domain>/<user.profile or space.name>/<type>/<name>)
    arn: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind.value}/{self.name}"


def is_sagemaker(record: Mapping[str, Any]) -> bool:
    return record.get("eventSource") == SOURCE


def is_sagemaker_event(event: Any) -> bool:
    """An EventBridge event whose CloudTrail record is one of SageMaker's calls."""
    return isinstance(event, dict) and isinstance(event.get("detail"), dict) and is_sagemaker(event["detail"])


def parse_record(record: Mapping[str, Any]) -> Creation | Skipped:
    """A CloudTrail record (an EventBridge detail, or a LookupEvents CloudTrailEvent)."""
    name = shapes.text(record, "eventName", "record", limit=100)
    source = shapes.text(record, "eventSource", "record", limit=100)
    if source != SOURCE or name not in EVENTS:
        return Skipped(f"{source[:60]} {name[:60]} is not a SageMaker create call costguard tags")
    if record.get("errorCode"):
        return Skipped(f"{name} failed with {str(record.get('errorCode'))[:60]}: nothing was created")
    kind = EVENTS[name]
    request = shapes.obj(record.get("requestParameters"), "requestParameters")
    response = shapes.optional_obj(record, "responseElements", "record")
    where = "requestParameters"
    if kind is Kind.NOTEBOOK:
        resource = shapes.text(request, "notebookInstanceName", where, limit=63)
        arn = shapes.optional_text(response, "notebookInstanceArn", "responseElements", limit=300)
    elif kind is Kind.ENDPOINT:
        resource = shapes.text(request, "endpointName", where, limit=63)
        arn = shapes.optional_text(response, "endpointArn", "responseElements", limit=300)
    else:
        app_type = shapes.text(request, "appType", where, limit=40)
        if app_type not in GOVERNED_APP_TYPES:
            return Skipped(f"a {app_type[:40]} app runs on no instance of its own")
        space = shapes.optional_text(request, "spaceName", where, limit=63)
        holder = f"space.{space}" if space else f"user.{shapes.text(request, 'userProfileName', where, limit=63)}"
        domain = shapes.text(request, "domainId", where, limit=63)
        resource = f"{domain}/{holder}/{app_type}/{shapes.text(request, 'appName', where, limit=63)}"
        arn = shapes.optional_text(response, "appArn", "responseElements", limit=400)
    check_key(kind.value, resource, f"{name} record")
    return Creation(
        event_id=shapes.optional_text(record, "eventID", "record", limit=100),
        event_time=_time(shapes.text(record, "eventTime", "record", limit=40)),
        region=shapes.region(record.get("awsRegion"), "record.awsRegion"),
        identity=parse_identity(record.get("userIdentity")),
        kind=kind,
        name=resource,
        arn=arn,
    )


def parse_lookup_event(result: Mapping[str, Any]) -> Creation | Skipped:
    return parse_record(lookup_record(result))


def _time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise EventValidationError(f"eventTime {value[:40]!r} is not an ISO 8601 time") from exc
