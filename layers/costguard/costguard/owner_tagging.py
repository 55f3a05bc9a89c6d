"""Owner tagging: the launch path (one CloudTrail event) and the daily backfill (every region).

Reads through adapters, decides with `ownership.decide_owner`, writes tags through `Ec2`, records
every tagging in the ledger. Returns a report that the handler logs and returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard import tags
from costguard.cloudtrail import EVENT_HISTORY, find_launches
from costguard.ec2 import LIVE_STATES, Ec2
from costguard.launches import LaunchEvent
from costguard.ledger import Action, Ledger
from costguard.observability import logger
from costguard.ownership import OwnerDecision, OwnerSource, decide_owner
from costguard.records import Instance
from costguard.settings import Mode
from costguard.slack.blocks import Message, bullet_list, context, escape, header, section

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudtrail import CloudTrailClient

# Sources that name nobody a Slack message could reach: listed for the team to fix by hand.
UNATTRIBUTED = {OwnerSource.SERVICE, OwnerSource.UNKNOWN}
# A launch is recorded in CloudTrail a few minutes around the instance's LaunchTime.
LAUNCH_SLACK = timedelta(minutes=15)


@dataclass(frozen=True)
class Tagging:
    """The outcome for one instance."""

    instance_id: str
    region: str
    instance_type: str
    launch_time: datetime
    decision: OwnerDecision
    written: Mapping[str, str]
    applied: bool


@dataclass
class TaggingReport:
    results: list[Tagging] = field(default_factory=list)
    volumes_tagged: int = 0
    lookup_pages: int = 0
    unreadable_events: int = 0
    deferred: list[str] = field(default_factory=list)  # not searched to the end: next run

    @property
    def unattributed(self) -> list[Tagging]:
        return [r for r in self.results if r.decision.source in UNATTRIBUTED]

    def summary(self) -> dict[str, Any]:
        by_source: dict[str, int] = defaultdict(int)
        for r in self.results:
            by_source[r.decision.source.value] += 1
        return {
            "instances": len(self.results),
            "tagged": sum(1 for r in self.results if r.written and r.applied),
            "by_source": dict(by_source),
            "volumes_tagged": self.volumes_tagged,
            "unattributed": [r.instance_id for r in self.unattributed],
            "cloudtrail_pages": self.lookup_pages,
            "unreadable_events": self.unreadable_events,
            "deferred": self.deferred,
        }


class OwnerTagger:
    """Owner tagging in one region."""

    def __init__(
        self,
        *,
        ec2: Ec2,
        autoscaling: AutoScalingClient,
        ledger: Ledger,
        owner_tag_key: str,
        mode: Mode,
    ) -> None:
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.ledger = ledger
        self.owner_tag_key = owner_tag_key
        self.mode = mode

    def tag_launch(self, launch: LaunchEvent, now: datetime) -> TaggingReport:
        """Tag the instances of one RunInstances call, and their EBS volumes."""
        report = TaggingReport()
        instances = self.ec2.describe(launch.instance_ids)
        found = {i.instance_id for i in instances}
        for missing in sorted(set(launch.instance_ids) - found):
            logger.warning("launched instance no longer exists", instance_id=missing)
        identities = {i.instance_id: launch for i in instances}
        decisions = self.decide(instances, identities)
        report.results = self.apply(instances, decisions, now)
        report.volumes_tagged = self._tag_volumes_of(instances, decisions)
        return report

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
        actions: list[Action] = []
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
                Action(
                    at=now,
                    kind="owner-unknown" if decision.source in UNATTRIBUTED else "owner-tagged",
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

    def _tag_volumes_of(self, instances: Sequence[Instance], decisions: Mapping[str, OwnerDecision]) -> int:
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
        for start in range(0, len(wanted), 50):  # DescribeAutoScalingGroups takes 50 names a call
            paginator = self.autoscaling.get_paginator("describe_auto_scaling_groups")
            for page in paginator.paginate(AutoScalingGroupNames=wanted[start : start + 50]):
                for group in page.get("AutoScalingGroups", []):
                    out[group["AutoScalingGroupName"]] = {
                        str(t["Key"]): str(t.get("Value", "")) for t in group.get("Tags", [])
                    }
        return out

    def backfill(
        self,
        cloudtrail: CloudTrailClient,
        now: datetime,
        *,
        notify: Callable[[Sequence[Tagging]], None] | None = None,
        max_pages: int = 200,
    ) -> TaggingReport:
        """Attribute every live instance with neither an owner tag nor an owner-source tag.

        Instances costguard already settled (owner-source set, even to `unknown`) are not looked up
        again. `notify` is called with the unattributed ones before anything is written, so that a
        failed Slack post fails the run while the instances are still untagged and will be retried.
        """
        report = TaggingReport()
        instances = list(self.ec2.iter_instances([{"Name": "instance-state-name", "Values": list(LIVE_STATES)}]))
        pending = [i for i in instances if not i.owner(self.owner_tag_key) and tags.OWNER_SOURCE not in i.tags]
        horizon = now - EVENT_HISTORY
        searchable = [i for i in pending if i.launch_time >= horizon]
        launches: dict[str, LaunchEvent] = {}
        if searchable:
            start = max(horizon, min(i.launch_time for i in searchable) - LAUNCH_SLACK)
            search = find_launches(cloudtrail, [i.instance_id for i in searchable], start, now, max_pages=max_pages)
            launches = search.found
            report.lookup_pages = search.pages
            report.unreadable_events = search.unreadable
            report.deferred = sorted(search.unsearched)
        settled = [i for i in pending if i.instance_id not in report.deferred]
        decisions = self.decide(settled, launches)
        if notify is not None:
            unattributed = [
                Tagging(i.instance_id, i.region, i.instance_type, i.launch_time, decisions[i.instance_id], {}, False)
                for i in settled
                if decisions[i.instance_id].source in UNATTRIBUTED
            ]
            if unattributed:
                notify(unattributed)
        report.results = self.apply(settled, decisions, now)
        report.volumes_tagged = self._propagate_to_volumes(instances, report.results)
        return report

    def _propagate_to_volumes(self, instances: Sequence[Instance], results: Sequence[Tagging]) -> int:
        """Give attached volumes that lack one the owner tag of their instance."""
        owners = {i.instance_id: i.owner(self.owner_tag_key) for i in instances}
        for result in results:
            if result.decision.owner:
                owners[result.instance_id] = result.decision.owner
        by_owner: dict[str, list[str]] = defaultdict(list)
        for volume in self.ec2.iter_attached_volumes():
            owner = owners.get(volume.instance_id, "")
            if owner and self.owner_tag_key not in volume.tags:
                by_owner[owner].append(volume.volume_id)
        for owner, volume_ids in sorted(by_owner.items()):
            self.ec2.create_tags(volume_ids, {self.owner_tag_key: tags.clip(owner)})
        return sum(len(v) for v in by_owner.values())


def unattributed_message(results: Sequence[Tagging], owner_tag_key: str) -> Message:
    """The alerts-channel notice for instances costguard could not give an owner."""
    count = len(results)
    how = f"`{escape(owner_tag_key)}={escape('<name or email>')}`"
    noun = "instance has" if count == 1 else "instances have"
    lines = [
        f"`{escape(r.instance_id)}` {escape(r.instance_type)} in {escape(r.region)}, "
        f"launched {r.launch_time:%Y-%m-%d}: {escape(r.decision.reason)}"
        for r in sorted(results, key=lambda r: (r.region, r.launch_time))
    ]
    return Message(
        text=f"{count} {noun} no owner",
        blocks=(
            header(f"{count} {noun} no owner"),
            section(
                "costguard could not tell who launched these, so nobody can be warned before they are "
                f"stopped and their cost is charged to no one. Tag each with {how}."
            ),
            section(bullet_list(lines)),
            context("They are tagged `costguard:owner-source` and listed again in the weekly digest."),
        ),
    )
