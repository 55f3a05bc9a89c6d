"""The one owner-tag writer: decides each instance's owner from its launch (or its group's tags), writes
the tags, one CreateTags per distinct tag set, and records every tagging in the ledger."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from costguard.aws.ec2 import Ec2
from costguard.core import tags
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.owners.launches import LaunchEvent
from costguard.owners.report import UNATTRIBUTED, Tagging
from costguard.owners.rules import OwnerDecision, OwnerSource, decide_owner
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

    def decide(
        self, instances: Sequence[Instance], launches: Mapping[str, LaunchEvent], *, as_launched: bool = False
    ) -> dict[str, OwnerDecision]:
        """Each instance's owner. `as_launched`: decided from the tags it had at launch, without the ones
        costguard wrote since, so that a launch event delivered again reaches the same decision."""
        group_tags = self._group_tags(
            {i.auto_scaling_group for i in instances if i.auto_scaling_group and not i.owner(self.owner_tag_key)}
        )
        decisions: dict[str, OwnerDecision] = {}
        for instance in instances:
            launch = launches.get(instance.instance_id)
            group = instance.auto_scaling_group
            existing = self._at_launch(instance.tags) if as_launched else instance.tags
            decisions[instance.instance_id] = decide_owner(
                launch.identity if launch else None,
                existing_tags=existing,
                owner_tag_key=self.owner_tag_key,
                group_tags=group_tags.get(group),
                group_name=group,
            )
        return decisions

    def _at_launch(self, now: Mapping[str, str]) -> dict[str, str]:
        """An instance's tags without costguard's own: the owner it wrote (unless it was there at launch),
        how it decided, who launched it."""
        source = now.get(tags.OWNER_SOURCE)
        own = {tags.OWNER_SOURCE, tags.CREATED_BY}
        if source is not None and source not in (OwnerSource.LAUNCH_TAG, OwnerSource.SERVICE_PROPAGATED):
            own.add(self.owner_tag_key)
        return {k: v for k, v in now.items() if k not in own}

    def apply(
        self,
        instances: Sequence[Instance],
        decisions: Mapping[str, OwnerDecision],
        now: datetime,
        *,
        launched: Mapping[str, datetime] | None = None,
    ) -> list[Tagging]:
        """Record each instance in the ledger, then write its tags (one CreateTags per distinct tag set).

        Recorded first, keyed by the instance's launch (`launched`: the launch event's time): a run killed
        between the two writes the same entry again when it is retried, and a launch event delivered again
        is recorded whether or not its tags are there already."""
        writes = {i.instance_id: decisions[i.instance_id].tags_to_write(self.owner_tag_key, i.tags) for i in instances}
        applied = self.mode.mutates
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
                applied or not written,
            )
            results.append(result)
            at = (launched or {}).get(instance.instance_id)
            if not written and at is None:
                continue
            actions.append(
                Entry(
                    at=at or now,
                    kind=EntryKind.OWNER_UNKNOWN if decision.source in UNATTRIBUTED else EntryKind.OWNER_TAGGED,
                    instance_id=instance.instance_id,
                    region=instance.region,
                    mode=self.mode.value,
                    applied=applied,
                    owner=decision.owner or instance.owner(self.owner_tag_key),
                    instance_type=instance.instance_type,
                    reason=decision.reason,
                )
            )
        self.ledger.record_many(actions)
        self._write_grouped(writes)
        for result in results:
            if result.written:
                logger.info(
                    "owner tagged",
                    instance_id=result.instance_id,
                    owner=result.decision.owner,
                    source=result.decision.source.value,
                    reason=result.decision.reason,
                    applied=result.applied,
                )
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
