"""The one owner-tag writer: decides each instance's owner from its launch (or its group's tags), writes
the tags, one CreateTags per distinct tag set, and records every tagging in the ledger."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from costguard.aws.ec2 import Ec2
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.owners.launches import LaunchEvent
from costguard.owners.report import UNATTRIBUTED, Tagging
from costguard.owners.rules import OwnerDecision, decide_owner
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient

GROUP_NAMES_PER_CALL = 50  # DescribeAutoScalingGroups takes 50 names a call


class OwnerTagWriter:
    """Owner tags in one region."""

    def __init__(
        self, *, ec2: Ec2, autoscaling: AutoScalingClient, ledger: Ledger, owner_tag_key: str, mode: Mode
    ) -> None:
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.ledger = ledger
        self.owner_tag_key = owner_tag_key
        self.mode = mode

    def decide(self, instances: Sequence[Instance], launches: Mapping[str, LaunchEvent]) -> dict[str, OwnerDecision]:
        group_tags = self._group_tags(
            {i.auto_scaling_group for i in instances if i.auto_scaling_group and not i.owner(self.owner_tag_key)}
        )
        decisions: dict[str, OwnerDecision] = {}
        for instance in instances:
            launch = launches.get(instance.instance_id)
            group = instance.auto_scaling_group
            decisions[instance.instance_id] = decide_owner(
                launch.identity if launch else None,
                existing_tags=instance.tags,
                owner_tag_key=self.owner_tag_key,
                group_tags=group_tags.get(group),
                group_name=group,
            )
        return decisions

    def apply(
        self, instances: Sequence[Instance], decisions: Mapping[str, OwnerDecision], now: datetime
    ) -> list[Tagging]:
        """Write tags, one CreateTags per distinct tag set, and record each instance in the ledger."""
        writes = {i.instance_id: decisions[i.instance_id].tags_to_write(self.owner_tag_key, i.tags) for i in instances}
        applied = self._write_grouped(writes)
        results: list[Tagging] = []
        actions: list[Entry] = []
        for instance in instances:
            decision = decisions[instance.instance_id]
            written = writes[instance.instance_id]
            result = Tagging(
                instance.instance_id,
                instance.region,
                instance.instance_type,
                instance.launch_time,
                decision,
                written,
                applied.get(instance.instance_id, True),
            )
            results.append(result)
            if not written:
                continue
            logger.info(
                "owner tagged",
                instance_id=instance.instance_id,
                owner=decision.owner,
                source=decision.source.value,
                reason=decision.reason,
                applied=result.applied,
            )
            actions.append(
                Entry(
                    at=now,
                    kind=EntryKind.OWNER_UNKNOWN if decision.source in UNATTRIBUTED else EntryKind.OWNER_TAGGED,
                    instance_id=instance.instance_id,
                    region=instance.region,
                    mode=self.mode.value,
                    applied=result.applied,
                    owner=decision.owner or instance.owner(self.owner_tag_key),
                    instance_type=instance.instance_type,
                    reason=decision.reason,
                )
            )
        self.ledger.record_many(actions)
        return results

    def _write_grouped(self, writes: Mapping[str, Mapping[str, str]]) -> dict[str, bool]:
        groups: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
        for resource_id, tag_set in writes.items():
            if tag_set:
                groups[tuple(sorted(tag_set.items()))].append(resource_id)
        applied: dict[str, bool] = {}
        for tag_items, resource_ids in groups.items():
            ok = self.ec2.create_tags(resource_ids, dict(tag_items))
            applied.update(dict.fromkeys(resource_ids, ok))
        return applied

    def tag_volumes_of(self, instances: Sequence[Instance], decisions: Mapping[str, OwnerDecision]) -> int:
        by_instance = {i.instance_id: i for i in instances}
        volume_ids = [v for i in instances for v in i.volume_ids]
        if not volume_ids:
            return 0
        writes: dict[str, Mapping[str, str]] = {}
        for volume in self.ec2.describe_volumes(volume_ids):
            instance = by_instance.get(volume.instance_id)
            if instance is None:
                continue
            decision = decisions[instance.instance_id]
            owner = decision.owner or instance.owner(self.owner_tag_key)
            wanted = OwnerDecision(owner or None, decision.source, decision.created_by, decision.reason)
            writes[volume.volume_id] = wanted.tags_to_write(self.owner_tag_key, volume.tags)
        self._write_grouped(writes)
        return sum(1 for w in writes.values() if w)

    def _group_tags(self, names: Iterable[str]) -> dict[str, dict[str, str]]:
        wanted = sorted(n for n in names if n)
        out: dict[str, dict[str, str]] = {}
        for start in range(0, len(wanted), GROUP_NAMES_PER_CALL):
            paginator = self.autoscaling.get_paginator("describe_auto_scaling_groups")
            for page in paginator.paginate(AutoScalingGroupNames=wanted[start : start + GROUP_NAMES_PER_CALL]):
                for group in page.get("AutoScalingGroups", []):
                    out[group["AutoScalingGroupName"]] = {
                        str(t["Key"]): str(t.get("Value", "")) for t in group.get("Tags", [])
                    }
        return out
