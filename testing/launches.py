"""CloudTrail RunInstances records and EventBridge launch events, built from the events/ fixtures; and
where a walk of them stopped, kept in memory (the state table's WalkCursors, for tests and benchmarks)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from costguard.state.cursors import WalkCursor
from testing.handlers import load_event

AMI = "ami-12c6146b"


def person(user: str, account: str = "123456789012") -> dict[str, Any]:
    """A person's session of the ml-research role (the session name is the person)."""
    return {
        "type": "AssumedRole",
        "arn": f"arn:aws:sts::{account}:assumed-role/ml-research/{user}",
        "sessionContext": {
            "sessionIssuer": {
                "type": "Role",
                "arn": f"arn:aws:iam::{account}:role/ml-research",
                "userName": "ml-research",
            }
        },
    }


def iam_user(user: str, account: str = "123456789012") -> dict[str, Any]:
    return {"type": "IAMUser", "arn": f"arn:aws:iam::{account}:user/{user}", "userName": user}


def launch_record(
    *, instance_id: str, region: str, instance_type: str, identity: dict[str, Any], when: datetime, event_id: str
) -> dict[str, Any]:
    """A RunInstances CloudTrail record in the same shape as the events/ fixtures."""
    record: dict[str, Any] = load_event("owner_tagger/runinstances-iam-user.json")["detail"]
    record.update(userIdentity=identity, eventTime=when.strftime("%Y-%m-%dT%H:%M:%SZ"), awsRegion=region)
    record["eventID"] = event_id
    record["requestParameters"]["instanceType"] = instance_type
    item = record["responseElements"]["instancesSet"]["items"][0]
    item.update(instanceId=instance_id, instanceType=instance_type)
    return record


def launch_event(fixture: str, instance_id: str) -> dict[str, Any]:
    """events/owner_tagger/<fixture>, pointed at a real instance id."""
    event: dict[str, Any] = load_event(f"owner_tagger/{fixture}")
    event["detail"]["responseElements"]["instancesSet"]["items"][0]["instanceId"] = instance_id
    return event


class MemoryCursors:
    """A walk's cursor in memory: what WalkCursors keeps in the state table."""

    def __init__(self) -> None:
        self.cursor: WalkCursor | None = None

    def load(self) -> WalkCursor | None:
        return self.cursor

    def save(self, cursor: WalkCursor | None) -> None:
        self.cursor = cursor
