"""Auto Scaling adapter: scale-in protection of group members. Takes its client; honours the mode."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from costguard.core.settings import Mode

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient

NAMES_PER_CALL = 50  # DescribeAutoScalingGroups and SetInstanceProtection take 50 at a time


class AutoScaling:
    def __init__(self, client: AutoScalingClient, mode: Mode) -> None:
        self.client = client
        self.mode = mode

    def protection(self, group_names: Iterable[str]) -> dict[str, bool]:
        """Instance id → ProtectedFromScaleIn, for every member of the named groups."""
        names = sorted(set(group_names))
        out: dict[str, bool] = {}
        for offset in range(0, len(names), NAMES_PER_CALL):
            pages = self.client.get_paginator("describe_auto_scaling_groups").paginate(
                AutoScalingGroupNames=names[offset : offset + NAMES_PER_CALL]
            )
            for page in pages:
                for group in page.get("AutoScalingGroups", []):
                    for member in group.get("Instances", []):
                        out[member["InstanceId"]] = bool(member.get("ProtectedFromScaleIn"))
        return out

    def set_protection(self, group: str, instance_ids: Sequence[str], protected: bool) -> bool:
        if not self.mode.mutates:
            return False
        for offset in range(0, len(instance_ids), NAMES_PER_CALL):
            self.client.set_instance_protection(
                AutoScalingGroupName=group,
                InstanceIds=list(instance_ids[offset : offset + NAMES_PER_CALL]),
                ProtectedFromScaleIn=protected,
            )
        return True
