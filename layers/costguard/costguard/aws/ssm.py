"""Systems Manager adapter: which instances SSM manages, Run Command of costguard's own document, and
its answers. Takes its client.

SendCommand takes at most 50 instance ids a call, and fails whole if one of them is not a managed
instance, so the check is sent only to instances DescribeInstanceInformation lists as Online.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

IDS_PER_CALL = 50  # SendCommand's InstanceIds and DescribeInstanceInformation's filter
# Invocations that will not change any more. "Pending", "InProgress" and "Delayed" still can.
DONE = {
    "Success",
    "Failed",
    "Cancelled",
    "TimedOut",
    "Undeliverable",
    "Terminated",
    "DeliveryTimedOut",
    "ExecutionTimedOut",
    "InvalidPlatform",
    "AccessDenied",
}
COMMAND_TIMEOUT_SECONDS = 30  # SendCommand's minimum: a check not started by then is not wanted


@dataclass(frozen=True)
class Invocation:
    instance_id: str
    status: str
    output: str = ""

    @property
    def done(self) -> bool:
        return self.status in DONE


def chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), IDS_PER_CALL):
        yield ordered[start : start + IDS_PER_CALL]


class Ssm:
    def __init__(self, client: SSMClient) -> None:
        self.client = client

    def ping_status(self, instance_ids: Sequence[str]) -> dict[str, str]:
        """Instance id → PingStatus (Online, ConnectionLost, Inactive) of those SSM manages."""
        out: dict[str, str] = {}
        for batch in chunks(instance_ids):
            pages = self.client.get_paginator("describe_instance_information").paginate(
                Filters=[{"Key": "InstanceIds", "Values": batch}], PaginationConfig={"PageSize": IDS_PER_CALL}
            )
            for page in pages:
                for info in page.get("InstanceInformationList", []):
                    out[str(info["InstanceId"])] = str(info.get("PingStatus", ""))
        return out

    def send(self, document: str, instance_ids: Sequence[str]) -> str:
        """Run the document on up to 50 instances; the command id. Every instance runs it, whatever
        happens on the others (MaxErrors 100%)."""
        response = self.client.send_command(
            DocumentName=document,
            InstanceIds=list(instance_ids),
            TimeoutSeconds=COMMAND_TIMEOUT_SECONDS,
            MaxConcurrency="100%",
            MaxErrors="100%",
            Comment="costguard activity check before an idle warning or stop",
        )
        return str(response["Command"]["CommandId"])

    def invocations(self, command_id: str) -> list[Invocation]:
        """Every instance's status and output (the first 2,500 characters) of one command."""
        out: list[Invocation] = []
        pages = self.client.get_paginator("list_command_invocations").paginate(
            CommandId=command_id, Details=True, PaginationConfig={"PageSize": IDS_PER_CALL}
        )
        for page in pages:
            for raw in page.get("CommandInvocations", []):
                plugins = raw.get("CommandPlugins") or [{}]
                out.append(
                    Invocation(str(raw["InstanceId"]), str(raw.get("Status", "")), str(plugins[0].get("Output", "")))
                )
        return out


# Default Host Management Configuration: one service setting per account and region, whose value is the name of
# the IAM role Systems Manager lends every EC2 instance (with a recent agent and IMDSv2) that has no instance
# profile of its own. Unset, it reads "$None" with the status "Default".
HOST_MANAGEMENT_SETTING = "/ssm/managed-instance/default-ec2-instance-management-role"
UNSET = "$None"


@dataclass(frozen=True)
class ServiceSetting:
    value: str
    status: str  # "Default" (never set, or reset) or "Customized"

    @property
    def unset(self) -> bool:
        return self.status == "Default" or self.value in {"", UNSET}


def setting_arn(partition: str, region: str, account: str, setting_id: str = HOST_MANAGEMENT_SETTING) -> str:
    """The setting's ARN: what IAM scopes ssm:*ServiceSetting to, and what the calls name it by."""
    return f"arn:{partition}:ssm:{region}:{account}:servicesetting{setting_id}"


def read_setting(ssm: SSMClient, arn: str) -> ServiceSetting:
    found = ssm.get_service_setting(SettingId=arn)["ServiceSetting"]
    return ServiceSetting(str(found.get("SettingValue", "")), str(found.get("Status", "")))


def update_setting(ssm: SSMClient, arn: str, value: str) -> None:
    ssm.update_service_setting(SettingId=arn, SettingValue=value)


def reset_setting(ssm: SSMClient, arn: str) -> None:
    ssm.reset_service_setting(SettingId=arn)
