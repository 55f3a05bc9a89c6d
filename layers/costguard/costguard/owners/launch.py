"""The launch path: the instances of one RunInstances call, tagged with their owner as they start."""

from __future__ import annotations

from datetime import datetime

from costguard.core.observability import logger
from costguard.owners.launches import LaunchEvent
from costguard.owners.report import TaggingReport
from costguard.owners.writer import OwnerTagWriter


def tag_launch(writer: OwnerTagWriter, launch: LaunchEvent, now: datetime) -> TaggingReport:
    """Tag the instances of one RunInstances call, and their EBS volumes."""
    report = TaggingReport()
    instances = writer.ec2.describe(launch.instance_ids)
    found = {i.instance_id for i in instances}
    for missing in sorted(set(launch.instance_ids) - found):
        logger.warning("launched instance no longer exists", instance_id=missing)
    identities = {i.instance_id: launch for i in instances}
    decisions = writer.decide(instances, identities, as_launched=True)
    at_launch = dict.fromkeys((i.instance_id for i in instances), launch.event_time)
    report.results = writer.apply(instances, decisions, now, launched=at_launch)
    report.volumes_tagged = writer.tag_volumes_of(instances, decisions)
    return report
