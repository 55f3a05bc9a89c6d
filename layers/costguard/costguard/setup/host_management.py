"""Systems Manager on every machine, from the deploy (DefaultHostManagement): the stack's custom resource turns on
Default Host Management Configuration in each governed region, so that every EC2 instance with a recent SSM agent
and IMDSv2 is managed, and answers the activity check, without an instance profile of its own.

The setting is the account's, one per region, so costguard changes it only where nobody set it: a region whose
setting already names a role is left as it is, and said. On delete (the stack's, or a region no longer governed)
a setting is reset only where it still names costguard's role: what costguard found there was the default,
since it sets nothing else. No record is needed to restore it: costguard's role is the stack's own.

A custom resource must always be answered, or the stack waits an hour: every request gets its answer, and a
delete always succeeds (a setting that could not be restored is said in the logs, never a stuck stack).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.ssm import ServiceSetting, read_setting, reset_setting, setting_arn, update_setting
from costguard.core.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

PHYSICAL_ID = "costguard-default-host-management"  # one per stack: its regions and role are its properties
SAID_LIMIT = 3000  # a custom resource's Data is at most 4,096 bytes
ERRORS = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class Answer:
    """What CloudFormation is told: SUCCESS or FAILED, and what was found and done, a line per region."""

    status: str
    said: list[str] = field(default_factory=list)
    reason: str = ""

    def body(self, event: Mapping[str, Any], physical_id: str) -> dict[str, Any]:
        said = "; ".join(self.said)[:SAID_LIMIT]
        return {
            "Status": self.status,
            "Reason": (self.reason or said or "done")[:SAID_LIMIT],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": {"Said": said},
        }


def regions_of(properties: Mapping[str, Any]) -> list[str]:
    """The governed regions (GovernedRegions; empty: the stack's own), each once, in their order."""
    listed = [r.strip() for r in str(properties.get("Regions", "")).split(",") if r.strip()]
    return list(dict.fromkeys(listed or [str(properties["HomeRegion"])]))


# One region's step: given its client, its setting's ARN and what the setting holds now, what was done, in a line.
Step = Callable[["SSMClient", str, ServiceSetting], str]


def each_region(
    ssm_for: Callable[[str], SSMClient],
    regions: Sequence[str],
    step: Step,
    *,
    partition: str,
    account: str,
    done: str,
) -> list[str]:
    """The setting read in each region and `step` taken on it (what the walk has `done`: "turned on",
    "restored"); a line per region of what was found and done. A region that would not answer is said ("not
    restored", with the error's code) and the walk goes on."""
    said = []
    for region in regions:
        ssm, arn = ssm_for(region), setting_arn(partition, region, account)
        try:
            said.append(f"{region}: {step(ssm, arn, read_setting(ssm, arn))}")
        except ERRORS as exc:
            logger.warning(f"default host management not {done}", region=region, error=str(exc)[:200])
            said.append(f"{region}: not {done} ({error_code(exc)})")
    logger.info(f"default host management {done}", said=said)
    return said


def turn_on(
    ssm_for: Callable[[str], SSMClient],
    regions: Sequence[str],
    role: str,
    *,
    partition: str,
    account: str,
    replacing: str = "",
) -> list[str]:
    """The setting set to costguard's `role` where it is unset (or names costguard's role it `replacing`); where it
    names another role, left as it is. A line per region of what was found and done."""

    def step(ssm: SSMClient, arn: str, found: ServiceSetting) -> str:
        if found.value == role:
            return f"on, with costguard's role {role}"
        if found.unset or (replacing and found.value == replacing):
            update_setting(ssm, arn, role)
            return f"turned on, with costguard's role {role}"
        return f"already on, with the account's role {found.value}: left as it is"

    return each_region(ssm_for, regions, step, partition=partition, account=account, done="turned on")


def restore(
    ssm_for: Callable[[str], SSMClient], regions: Sequence[str], role: str, *, partition: str, account: str
) -> list[str]:
    """The setting reset where it names costguard's `role` (costguard found it unset: it sets no other); left as it
    is elsewhere. A line per region."""

    def step(ssm: SSMClient, arn: str, found: ServiceSetting) -> str:
        if found.value == role:
            reset_setting(ssm, arn)
            return "reset to unset, as costguard found it"
        return f"not costguard's ({found.value}): left as it is"

    return each_region(ssm_for, regions, step, partition=partition, account=account, done="restored")


def handle(event: Mapping[str, Any], ssm_for: Callable[[str], SSMClient]) -> Answer:
    """One CloudFormation request (Create, Update, Delete) of the custom resource, carried out."""
    # The stack's ARN says the partition and the account: arn:aws:cloudformation:<region>:<account>:stack/...
    _, partition, _, _, account, _ = str(event["StackId"]).split(":", 5)
    kind, properties = event["RequestType"], event["ResourceProperties"]
    regions, role = regions_of(properties), str(properties["RoleName"])
    if kind == "Delete":
        return Answer("SUCCESS", restore(ssm_for, regions, role, partition=partition, account=account))
    said: list[str] = []
    if kind == "Update":
        old = event.get("OldResourceProperties") or {}
        old_role = str(old.get("RoleName", ""))
        dropped = [r for r in regions_of(old) if r not in regions] if old else []
        said += restore(ssm_for, dropped, old_role, partition=partition, account=account) if old_role else []
        replacing = old_role if old_role != role else ""
        said += turn_on(ssm_for, regions, role, partition=partition, account=account, replacing=replacing)
        return Answer("SUCCESS", said)
    return Answer("SUCCESS", turn_on(ssm_for, regions, role, partition=partition, account=account))


def answer(event: Mapping[str, Any], ssm_for: Callable[[str], SSMClient]) -> tuple[Answer, str]:
    """The request handled, whatever happens: an unexpected error fails a create or an update (the deploy says
    why) and never a delete. Returns the answer and the resource's physical id."""
    physical_id = str(event.get("PhysicalResourceId") or PHYSICAL_ID)
    try:
        return handle(event, ssm_for), physical_id
    except Exception as exc:  # CloudFormation would wait an hour for an answer that never comes
        logger.exception("default host management request failed", request=event.get("RequestType"))
        status = "SUCCESS" if event.get("RequestType") == "Delete" else "FAILED"
        return Answer(status, reason=f"{type(exc).__name__}: {str(exc)[:300]}"), physical_id


def send(url: str, body: Mapping[str, Any]) -> None:
    """The answer PUT to the request's pre-signed S3 URL (no content type: the signature has none)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - CloudFormation's https URL
        logger.info("custom resource answered", status=body["Status"], http=response.status)
