"""Plain typed records that adapters return and decisions consume."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Instance:
    """One EC2 instance as DescribeInstances describes it, reduced to what costguard decides on."""

    instance_id: str
    region: str
    instance_type: str
    state: str
    launch_time: datetime
    tags: Mapping[str, str] = field(default_factory=dict)
    volume_ids: tuple[str, ...] = ()
    root_device_type: str = "ebs"
    lifecycle: str = ""  # "spot", "scheduled", "capacity-block" or "" for on-demand
    spot_request_id: str = ""
    hibernation_configured: bool = False
    platform: str = ""
    private_dns_name: str = ""

    @property
    def auto_scaling_group(self) -> str:
        return self.tags.get("aws:autoscaling:groupName", "")

    def owner(self, owner_tag_key: str) -> str:
        return self.tags.get(owner_tag_key, "").strip()
