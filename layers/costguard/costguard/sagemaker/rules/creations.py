"""CloudTrail records of SageMaker create calls, parsed (CreateNotebookInstance, CreateEndpoint, CreateApp), and
who owns a Studio app created on a user's behalf. Pure: no I/O.

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
from costguard.core.ownership import Identity, OwnerDecision, OwnerSource, lookup_record, parse_identity
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


PERSON = {OwnerSource.IAM_USER, OwnerSource.IDENTITY_CENTER, OwnerSource.FEDERATED_USER, OwnerSource.ROOT}


def app_owner(decision: OwnerDecision, holder_tags: dict[str, str], owner_tag_key: str, holder: str) -> OwnerDecision:
    """A Studio app's owner: the create call's identity when it names a person (an IAM user, an Identity
    Center or federated user, an email as session name); else its user profile's Owner tag; else nobody
    (SageMaker's execution role is not a person, and a session name may be SageMaker's own)."""
    if decision.source is OwnerSource.LAUNCH_TAG:
        return decision  # the app carries an owner already
    if decision.owner is not None and (decision.source in PERSON or "@" in decision.owner):
        return decision
    profile_owner = holder_tags.get(owner_tag_key, "").strip()
    if profile_owner:
        return OwnerDecision(profile_owner, OwnerSource.GROUP_TAG, decision.created_by, f"{owner_tag_key} of {holder}")
    named = f"created by {decision.owner} (not a person)" if decision.owner else decision.reason
    return OwnerDecision(
        None, OwnerSource.UNKNOWN, decision.created_by, f"{named}; {holder} has no {owner_tag_key} tag"
    )
