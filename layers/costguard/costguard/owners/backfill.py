"""The daily backfill: every live instance with no owner tag and no owner-source tag, attributed from
CloudTrail's 90-day history, its attached volumes given the owner too."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from costguard.aws.cloudtrail import EVENT_HISTORY, CloudTrail
from costguard.aws.ec2 import LIVE_STATES
from costguard.core import tags
from costguard.core.records import Instance
from costguard.owners.launches import LaunchEvent
from costguard.owners.report import UNATTRIBUTED, Tagging, TaggingReport
from costguard.owners.rules import owner_needs_correction
from costguard.owners.search import Cursors, find_launches
from costguard.owners.writer import OwnerTagWriter

# A launch is recorded in CloudTrail a few minutes around the instance's LaunchTime.
LAUNCH_SLACK = timedelta(minutes=15)


class Backfill:
    def __init__(
        self,
        writer: OwnerTagWriter,
        trail: CloudTrail,
        *,
        cursors: Cursors | None = None,
        time_left: Callable[[], float] | None = None,
    ) -> None:
        self.cursors = cursors  # the walk of CloudTrail resumes where the last run stopped
        self.time_left = time_left
        self.writer = writer
        self.ec2 = writer.ec2
        self.owner_tag_key = writer.owner_tag_key
        self.trail = trail

    def run(
        self,
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
            search = find_launches(
                self.trail,
                [i.instance_id for i in searchable],
                start,
                now,
                max_pages=max_pages,
                cursors=self.cursors,
                time_left=self.time_left,
            )
            launches = search.found
            report.lookup_pages = search.pages
            report.unreadable_events = search.unreadable
            report.deferred = sorted(search.unsearched)
        # Owners costguard once wrote from a deployment session's name, corrected from their own tags.
        stale = [i for i in instances if owner_needs_correction(i.tags, self.owner_tag_key)]
        settled = [i for i in pending if i.instance_id not in report.deferred] + stale
        decisions = self.writer.decide(settled, launches)
        if notify is not None:
            unattributed = [
                Tagging(i.instance_id, i.region, i.instance_type, i.launch_time, decisions[i.instance_id], {}, False)
                for i in settled
                if decisions[i.instance_id].source in UNATTRIBUTED
            ]
            if unattributed:
                notify(unattributed)
        # Keyed by each launch, so that a run killed between its records and its tags writes the same again.
        launched = {
            i.instance_id: launches[i.instance_id].event_time if i.instance_id in launches else i.launch_time
            for i in settled
        }
        report.results = self.writer.apply(settled, decisions, now, launched=launched)
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
