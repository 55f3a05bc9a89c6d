"""The owner tagger's two flows: a launch tagged as it happens, and the daily backfill of every governed region
(EC2 instances, then what else the same CloudTrail covers there: SageMaker's resources, when governed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.cloudtrail import CloudTrail
from costguard.core.formatting import plural
from costguard.core.observability import ignored, logger, metrics
from costguard.core.records import Skipped
from costguard.owners.backfill import Backfill
from costguard.owners.launch import tag_launch
from costguard.owners.launches import parse_eventbridge_event
from costguard.owners.messages import unattributed_message
from costguard.owners.report import Tagging, TaggingReport
from costguard.owners.writer import OwnerTagWriter
from costguard.slack.notifier import SlackNotifier
from costguard.state.cursors import WalkCursors


@dataclass
class OwnerTagger:
    writer_for: Callable[[str], OwnerTagWriter]
    trail_for: Callable[[str], CloudTrail]
    cursors_for: Callable[[str], WalkCursors]  # where each region's backfill walk resumes
    notifier: SlackNotifier
    channel: str
    owner_tag_key: str
    regions: Sequence[str]
    time_left: Callable[[], float]
    # What else the backfill attributes in a region from the same trail; its summary joins the region's.
    also_backfill: Callable[[str, CloudTrail, datetime], Mapping[str, Any]] | None = None

    def launch(self, event: Any, now: datetime) -> dict[str, Any]:
        """A RunInstances event: the instance and its volumes tagged with the owner."""
        launch = parse_eventbridge_event(event)
        if isinstance(launch, Skipped):
            return ignored(launch.reason)
        if launch.region not in self.regions:
            return ignored(f"region {launch.region} is not governed")
        report = tag_launch(self.writer_for(launch.region), launch, now)
        _emit(report)
        return {"status": "tagged", "region": launch.region, **report.summary()}

    def backfill(self, now: datetime) -> dict[str, Any]:
        """Every governed region's untagged instances attributed from CloudTrail; one region's failure does not
        stop the others', and fails the run at the end so that the scheduler retries it (settled instances are
        not looked up again)."""
        regions: dict[str, Any] = {}
        failures: dict[str, str] = {}

        def notify(results: Sequence[Tagging]) -> None:
            self.notifier.post(self.channel, unattributed_message(results, self.owner_tag_key))

        for region in self.regions:
            try:
                trail = self.trail_for(region)
                walk = Backfill(
                    self.writer_for(region), trail, cursors=self.cursors_for(region), time_left=self.time_left
                )
                report = walk.run(now, notify=notify)
                also = self.also_backfill(region, trail, now) if self.also_backfill else {}
            except Exception as exc:  # one region's failure must not stop the others' work
                logger.exception("backfill failed", region=region)
                failures[region] = f"{type(exc).__name__}: {exc}"
                continue
            _emit(report)
            regions[region] = {**report.summary(), **also}
        if failures:
            raise RuntimeError(f"backfill failed in {plural(len(failures), 'region')}: {failures}")
        return {"status": "backfilled", "regions": regions}


def _emit(report: TaggingReport) -> None:
    summary = report.summary()
    metrics.add_metric(name="InstancesTagged", unit=MetricUnit.Count, value=summary["tagged"])
    metrics.add_metric(name="InstancesUnattributed", unit=MetricUnit.Count, value=len(summary["unattributed"]))
