"""When the members' StackSet fails in an account: CloudFormation's event read, and what the hub's alerts channel
is told. Pure.

CloudFormation sends a "CloudFormation StackSet StackInstance Status Change" event to EventBridge in the account
and region that administer the StackSet (make org-deploy: the hub's), one per stack instance, each time its status
changes; the hub's rule (template.yaml, OrganizationDigestFunction's StackSetFailed) passes on the failures of the
members' StackSet only. The failed instance is named by its stack's ARN, which holds the member's account and
region (docs.aws.amazon.com, "StackSet Stack Instance Status Change event detail").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.slack.blocks import Message, context, header, mrkdwn, section

SOURCE = "aws.cloudformation"
DETAIL_TYPE = "CloudFormation StackSet StackInstance Status Change"
# The detailed statuses that leave an account without its stack (the rest: PENDING, RUNNING, SUCCEEDED, CANCELLED
# by a failure elsewhere, SKIPPED_SUSPENDED_ACCOUNT) are not told. The template's rule lists the same.
FAILED = ("FAILED", "FAILED_IMPORT", "INOPERABLE")
_STACK = re.compile(r"^arn:aws[a-z-]*:cloudformation:([a-z0-9-]{1,30}):(\d{12}):stack/")
_STACK_SET = re.compile(r"^arn:aws[a-z-]*:cloudformation:[a-z0-9-]{1,30}:\d{12}:stackset/([A-Za-z0-9-]{1,128}):")


@dataclass(frozen=True)
class InstanceFailure:
    """One account and region where the members' StackSet could not create, update or delete the stack."""

    event_id: str
    stack_set: str
    account: str
    region: str
    action: str  # CREATE, UPDATE, DELETE, DETECT_DRIFT, or "" when the event does not say
    status: str  # FAILED, FAILED_IMPORT, INOPERABLE
    reason: str  # CloudFormation's status reason, as it wrote it


def is_stackset_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("source") == SOURCE and event.get("detail-type") == DETAIL_TYPE


def read_instance_failure(event: Mapping[str, Any]) -> InstanceFailure | None:
    """The failure an event tells, None for a status that is not one (a rule edited by hand may pass others).
    EventValidationError naming the field that cannot be read."""
    detail = shapes.optional_obj(event, "detail", "event")
    details = shapes.optional_obj(detail, "status-details", "event.detail")
    status = shapes.optional_text(details, "detailed-status", "event.detail.status-details", limit=40)
    if status not in FAILED:
        return None
    stack = _STACK.match(shapes.text(detail, "stack-id", "event.detail", limit=2048))
    stack_set = _STACK_SET.match(shapes.text(detail, "stack-set-arn", "event.detail", limit=2048))
    if stack is None or stack_set is None:
        raise EventValidationError("event.detail's stack-id or stack-set-arn is not a CloudFormation ARN")
    return InstanceFailure(
        event_id=shapes.text(event, "id", "event", limit=100),
        stack_set=stack_set.group(1),
        account=stack.group(2),
        region=stack.group(1),
        action=shapes.optional_text(detail, "action", "event.detail", limit=40),
        status=status,
        reason=shapes.optional_text(details, "status-reason", "event.detail.status-details", limit=2000),
    )


_DOING = {"CREATE": "create", "UPDATE": "update", "DELETE": "delete", "DETECT_DRIFT": "check the drift of"}


def failure_message(failure: InstanceFailure, admin_region: str) -> Message:
    """What failed where, CloudFormation's words (escaped: AWS wrote them from the member's resources), and what
    to do: until it is fixed, costguard does not govern that account and region."""
    doing = _DOING.get(failure.action, "deploy")
    blocks = [
        header("costguard's StackSet failed in an account"),
        section(
            mrkdwn(
                ":warning: The StackSet *{}* could not {} costguard's stack in account `{}` ({}): *{}*. "
                "Until it can, costguard does not govern that account there, and the organization's digest "
                "names it as not reporting.",
                failure.stack_set,
                doing,
                failure.account,
                failure.region,
                failure.status,
            )
        ),
        section(mrkdwn("CloudFormation: {}", failure.reason or "no reason given")),
        context(
            mrkdwn(
                "What to do: the StackSet's stack instances in CloudFormation ({}, this account) say why; once the "
                "cause is fixed, run make org-deploy again, which updates every instance.",
                admin_region,
            )
        ),
    ]
    text = f"costguard's StackSet {failure.stack_set} failed in account {failure.account} ({failure.region})"
    return Message(text, tuple(blocks))


# A stack instance's detailed status (ListStackInstances' StackInstanceStatus.DetailedStatus), as the digest says it.
_BUSY = ("PENDING", "RUNNING")


def why_not_reporting(instances: Sequence[Mapping[str, Any]], accounts: Sequence[str]) -> dict[str, str]:
    """Why each of `accounts` may have no figures, from the members' StackSet's instances (ListStackInstances'
    summaries): its stack failed (CloudFormation's reason), is still being deployed, or was never deployed there.
    An account whose every instance is current says nothing here: its own digest did not hand its week over."""
    by_account: dict[str, list[Mapping[str, Any]]] = {}
    for instance in instances:
        by_account.setdefault(str(instance.get("Account", "")), []).append(instance)
    why: dict[str, str] = {}
    for account in accounts:
        found = by_account.get(account)
        if not found:
            why[account] = "costguard is not deployed there yet (the StackSet has no stack in it)"
            continue
        for instance in found:
            detailed = str((instance.get("StackInstanceStatus") or {}).get("DetailedStatus") or "")
            status = str(instance.get("Status") or "")
            region = str(instance.get("Region") or "")
            reason = str(instance.get("StatusReason") or "no reason given")
            if detailed in FAILED or status == "INOPERABLE" or (status == "OUTDATED" and detailed not in _BUSY):
                why[account] = f"its stack in {region} failed: {reason}"
                break
            if detailed in _BUSY:
                why[account] = f"its stack in {region} is being deployed"
    return why
