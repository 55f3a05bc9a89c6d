"""Systems Manager for the activity check, where moto answers no Run Command: DescribeInstanceInformation,
SendCommand and ListCommandInvocations over a world's managed nodes, in the shape both boto3's client and
the wire use, at least as strict as SSM about what it is sent.

Kept as SSM keeps them: DescribeInstanceInformation pages of 5 to 50 (10 unless asked), filtered by
`InstanceIds` (1 to 100 values; any other filter is refused, not ignored); SendCommand to 1 to 50
instances, by document name; ListCommandInvocations of a command it knows (else InvalidCommandId), 1 to
50 a page, each plugin's output cut at 2,500 characters as SSM cuts it. A node that never answers stays
`InProgress`. The answer is what the machine's check would say when the invocations are read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from testing.aws.errors import ApiError, unsupported

PAGE_MIN, PAGE_MAX, PAGE_DEFAULT = 5, 50, 10
MAX_FILTER_VALUES = 100
MAX_TARGETS = 50
MAX_OUTPUT = 2_500
HOST_MANAGEMENT = "/ssm/managed-instance/default-ec2-instance-management-role"  # the one service setting answered


class ManagedNodes(Protocol):
    def nodes(self) -> Iterable[tuple[str, str]]:
        """The managed nodes DescribeInstanceInformation lists: (instance id, ping status), in order."""
        ...

    def check(self, instance_id: str) -> str | None:
        """What the activity check prints on this node now; None: it never answers."""
        ...


def _validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


class SystemsManager:
    def __init__(self, nodes: ManagedNodes) -> None:
        self.source = nodes
        self.commands: dict[str, list[str]] = {}
        self.documents: dict[str, str] = {}
        self.checked = 0  # instances a command was sent to
        self.host_management_role = ""  # Default Host Management Configuration's role: "" unset, as a new account
        self._lock = threading.Lock()

    def describe_instance_information(self, params: Mapping[str, Any]) -> dict[str, Any]:
        size = int(params.get("MaxResults", PAGE_DEFAULT))
        if not PAGE_MIN <= size <= PAGE_MAX:
            raise _validation(f"MaxResults {size}: {PAGE_MIN} to {PAGE_MAX}")
        if params.get("InstanceInformationFilterList"):
            raise unsupported("DescribeInstanceInformation's InstanceInformationFilterList")
        wanted: set[str] | None = None
        for f in params.get("Filters") or []:
            if f["Key"] != "InstanceIds":
                raise unsupported(f"DescribeInstanceInformation's {f['Key']} filter")
            if not 1 <= len(f["Values"]) <= MAX_FILTER_VALUES:
                raise _validation(f"{len(f['Values'])} filter values: 1 to {MAX_FILTER_VALUES}")
            wanted = set(f["Values"])
        pool = [(i, ping) for i, ping in self.source.nodes() if wanted is None or i in wanted]
        start = _token(params.get("NextToken"), len(pool) + 1)
        out: dict[str, Any] = {
            "InstanceInformationList": [
                {"InstanceId": i, "PingStatus": ping, "ResourceType": "EC2Instance", "PlatformType": "Linux"}
                for i, ping in pool[start : start + size]
            ]
        }
        if start + size < len(pool):
            out["NextToken"] = str(start + size)
        return out

    def get_service_setting(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Default Host Management Configuration's setting, by its id or its ARN (arn:…:servicesetting/ssm/…);
        any other setting is refused, not guessed."""
        setting = str(params.get("SettingId", ""))
        if not (
            setting == HOST_MANAGEMENT
            or (setting.startswith("arn:") and setting.endswith(f":servicesetting{HOST_MANAGEMENT}"))
        ):
            raise unsupported(f"GetServiceSetting of {setting!r}")
        role = self.host_management_role
        found = {
            "SettingId": HOST_MANAGEMENT,
            "SettingValue": role or "$None",
            "Status": "Customized" if role else "Default",
        }
        return {"ServiceSetting": found}

    def send_command(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if params.get("Targets"):
            raise unsupported("SendCommand's Targets")
        ids = list(params.get("InstanceIds") or [])
        if not 1 <= len(ids) <= MAX_TARGETS:
            raise _validation(f"{len(ids)} InstanceIds: 1 to {MAX_TARGETS}")
        if not params.get("DocumentName"):
            raise _validation("DocumentName is required")
        with self._lock:
            command = f"{len(self.commands):08d}-0000-4000-8000-000000000000"
            self.commands[command] = ids
            self.documents[command] = str(params["DocumentName"])
            self.checked += len(ids)
        return {
            "Command": {
                "CommandId": command,
                "DocumentName": params["DocumentName"],
                "InstanceIds": ids,
                "Status": "Pending",
            }
        }

    def list_command_invocations(self, params: Mapping[str, Any]) -> dict[str, Any]:
        command = params.get("CommandId", "")
        if command not in self.commands:
            raise ApiError("InvalidCommandId", f"the command {command!r} does not exist")
        size = int(params.get("MaxResults", PAGE_MAX))
        if not 1 <= size <= PAGE_MAX:
            raise _validation(f"MaxResults {size}: 1 to {PAGE_MAX}")
        ids = self.commands[command]
        start = _token(params.get("NextToken"), len(ids) + 1)
        invocations = []
        for instance_id in ids[start : start + size]:
            output = self.source.check(instance_id)
            status = "Success" if output is not None else "InProgress"
            invocation: dict[str, Any] = {
                "CommandId": command,
                "InstanceId": instance_id,
                "DocumentName": self.documents[command],
                "Status": status,
            }
            if params.get("Details"):
                plugin = {"Name": "activityCheck", "Status": status, "Output": (output or "")[:MAX_OUTPUT]}
                invocation["CommandPlugins"] = [plugin]
            invocations.append(invocation)
        out: dict[str, Any] = {"CommandInvocations": invocations}
        if start + size < len(ids):
            out["NextToken"] = str(start + size)
        return out


def _token(token: str | None, limit: int) -> int:
    if not token:
        return 0
    if not token.isdigit() or int(token) >= limit:
        raise ApiError("InvalidNextToken", "The specified token is not valid")
    return int(token)
