"""Owner tags on SageMaker resources: from the CloudTrail identity of their create call (as it happens, and a
daily backfill for those that predate the deploy), with the EC2 owner rules (core.ownership).

A Studio app is created by SageMaker with the domain's execution role on the user's behalf: its record often
names a role, not a person. Its owner is then the `Owner` tag of the user profile it runs for (a private
space: its owner's profile), and the create call's identity only when that names a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.cloudtrail import EVENT_HISTORY, CloudTrail
from costguard.aws.sagemaker import SageMaker
from costguard.core import tags
from costguard.core.errors import EventValidationError
from costguard.core.observability import ignored, logger
from costguard.core.ownership import OwnerDecision, OwnerSource, decide_owner, owner_needs_correction
from costguard.core.records import Skipped
from costguard.core.sagemaker import Kind, Resource
from costguard.core.settings import Mode
from costguard.sagemaker.rules.creations import EVENTS, Creation, app_owner, parse_lookup_event, parse_record
from costguard.sagemaker.words.messages import unattributed
from costguard.slack.notifier import SlackNotifier
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger

UNATTRIBUTED = {OwnerSource.SERVICE, OwnerSource.UNKNOWN}
RESERVE_SECONDS = 60.0


@dataclass
class OwnerReport:
    tagged: list[str] = field(default_factory=list)
    unattributed: list[tuple[str, str, str]] = field(default_factory=list)  # (key, region, why)
    pages: int = 0
    deferred: bool = False
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {
            "sagemaker_tagged": self.tagged,
            "sagemaker_unattributed": [k for k, _, _ in self.unattributed],
            "sagemaker_cloudtrail_pages": self.pages,
            "sagemaker_deferred": self.deferred,
            "sagemaker_errors": self.errors,
        }


class SageMakerOwners:
    def __init__(self, *, api: SageMaker, ledger: Ledger, owner_tag_key: str, mode: Mode) -> None:
        self.api = api
        self.ledger = ledger
        self.owner_tag_key = owner_tag_key
        self.mode = mode

    def decide(self, resource: Resource, creation: Creation | None) -> OwnerDecision:
        decision = decide_owner(
            creation.identity if creation else None, existing_tags=resource.tags, owner_tag_key=self.owner_tag_key
        )
        if resource.kind is Kind.APP and self.owner_tag_key not in resource.tags:
            domain, holder, _, _ = resource.app_parts
            holder_tags = self.api.holder_tags(domain, holder)
            return app_owner(decision, holder_tags, self.owner_tag_key, holder.replace(".", " ", 1))
        return decision

    def tag(self, resource: Resource, creation: Creation | None, now: datetime, report: OwnerReport) -> None:
        decision = self.decide(resource, creation)
        written = decision.tags_to_write(self.owner_tag_key, resource.tags)
        if not written:
            return
        applied = self.api.add_tags(resource.arn, written)
        unknown = decision.source in UNATTRIBUTED
        if unknown:
            report.unattributed.append((resource.key, resource.region, decision.reason))
        else:
            report.tagged.append(resource.key)
        logger.info("sagemaker owner tagged", resource=resource.key, owner=decision.owner, source=decision.source.value)
        self.ledger.record(
            Entry(
                at=now,
                kind=EntryKind.OWNER_UNKNOWN if unknown else EntryKind.OWNER_TAGGED,
                instance_id=resource.key,
                region=resource.region,
                mode=self.mode.value,
                applied=applied,
                owner=decision.owner or "",
                instance_type=resource.instance_type,
                reason=decision.reason,
            )
        )

    def tag_creation(self, creation: Creation, now: datetime) -> OwnerReport:
        report = OwnerReport()
        resource = self.api.resource(creation.kind, creation.name)
        if resource is None:
            logger.warning("created SageMaker resource no longer exists", resource=creation.key)
            return report
        self.tag(resource, creation, now, report)
        return report

    def backfill(
        self,
        trail: CloudTrail,
        now: datetime,
        *,
        accelerated: Callable[[str], bool],
        time_left: Callable[[], float],
        max_pages: int = 60,
    ) -> OwnerReport:
        """Every GPU notebook instance, endpoint and Studio app with neither an owner nor an owner-source tag,
        attributed from CloudTrail's 90 days of create calls (walked once per event name, newest first, until
        all are found, the pages run out, or the run nears its end: the rest waits for tomorrow)."""
        report = OwnerReport()
        pending: list[Resource] = []
        stale: list[Resource] = []
        for read in (self.api.notebooks, self.api.endpoints, self.api.apps):
            try:
                listed = read(accelerated)
            except READ_ERRORS as exc:  # one kind unreadable (no Studio here, a right missing): said, not fatal
                report.errors.append(f"{read.__name__}: {error_code(exc)}")
                continue
            pending += [r for r in listed if self.owner_tag_key not in r.tags and tags.OWNER_SOURCE not in r.tags]
            stale += [r for r in listed if owner_needs_correction(r.tags, self.owner_tag_key)]
        # Owners costguard once wrote from a session that names no person (SageMaker's own), corrected from the
        # create call's ARN on the resource itself: no CloudTrail look-up.
        for resource in stale:
            self.tag(resource, None, now, report)
        if not pending:
            return report
        found = self._walk(trail, pending, now, time_left=time_left, max_pages=max_pages, report=report)
        for resource in pending:
            creation = found.get(resource.key)
            if creation is None and report.deferred:
                continue  # not searched to the end: not called unknown yet
            self.tag(resource, creation, now, report)
        return report

    def _walk(
        self,
        trail: CloudTrail,
        pending: Sequence[Resource],
        now: datetime,
        *,
        time_left: Callable[[], float],
        max_pages: int,
        report: OwnerReport,
    ) -> dict[str, Creation]:
        wanted = {r.key for r in pending}
        found: dict[str, Creation] = {}
        start = max(now - EVENT_HISTORY, min(r.created or r.since for r in pending) - EVENT_HISTORY / 90)
        for event_name, kind in EVENTS.items():
            if not any(r.kind is kind for r in pending):
                continue
            for pages, (events, more) in enumerate(trail.pages(("EventName", event_name), start, now), start=1):
                report.pages += 1
                for result in events:
                    try:
                        parsed = parse_lookup_event(result)
                    except EventValidationError as exc:
                        logger.warning("unreadable CloudTrail event", event_id=result.get("EventId"), error=str(exc))
                        continue
                    if not isinstance(parsed, Skipped) and parsed.key in wanted:
                        found.setdefault(parsed.key, parsed)  # newest first: the latest create of that name
                if wanted <= set(found):
                    return found
                if more and (pages >= max_pages or time_left() < RESERVE_SECONDS):
                    report.deferred = True
                    break
        return found


@dataclass
class SageMakerTagging:
    """The owner tagger's SageMaker part: a create call tagged as it happens, and each region's backfill from the
    trail the instances' backfill reads. The unattributed are posted to the alerts channel. Nothing at all with
    SageMakerGovernance off."""

    owners_for: Callable[[str], SageMakerOwners]
    notifier: SlackNotifier
    channel: str
    owner_tag_key: str
    regions: Sequence[str]
    governed: bool
    accelerated: Callable[[str], bool]  # an ml.* type of the accelerator families
    time_left: Callable[[], float]

    def creation(self, event: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        """A SageMaker create call: the notebook instance, endpoint or Studio app tagged with its owner."""
        if event.get("detail-type") != "AWS API Call via CloudTrail":
            detail_type = str(event.get("detail-type"))[:60]
            raise EventValidationError(f"detail-type {detail_type!r} is not a CloudTrail API call")
        if not self.governed:
            return ignored("SageMaker governance is off")
        created = parse_record(event["detail"])
        if isinstance(created, Skipped):
            return ignored(created.reason)
        if created.region not in self.regions:
            return ignored(f"region {created.region} is not governed")
        report = self.owners_for(created.region).tag_creation(created, now)
        self._tell(report)
        return {"status": "tagged", "region": created.region, **report.summary()}

    def backfill(self, region: str, trail: CloudTrail, now: datetime) -> Mapping[str, Any]:
        """SageMaker resources without an owner in one region, from CloudTrail's create calls."""
        if not self.governed:
            return {}
        owners = self.owners_for(region)
        report = owners.backfill(trail, now, accelerated=self.accelerated, time_left=self.time_left)
        self._tell(report)
        return report.summary()

    def _tell(self, report: OwnerReport) -> None:
        if report.unattributed:
            self.notifier.post(self.channel, unattributed(report.unattributed, self.owner_tag_key))
