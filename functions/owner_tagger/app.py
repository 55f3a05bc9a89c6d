"""owner_tagger: tags each launched instance (and its volumes) with its owner, and each SageMaker notebook
instance, endpoint and Studio app with its creator; daily backfill of both.

Triggers: EventBridge rules on CloudTrail RunInstances and on SageMaker's CreateNotebookInstance,
CreateEndpoint and CreateApp (real time, this region), and an EventBridge Scheduler schedule whose input is
{"costguard": "backfill"} (every governed region).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.ec2 import Ec2
from costguard.aws.sagemaker import SageMaker
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.records import Skipped
from costguard.core.settings import OwnerSettings
from costguard.owners.backfill import Backfill
from costguard.owners.launch import tag_launch
from costguard.owners.launches import parse_eventbridge_event
from costguard.owners.messages import unattributed_message
from costguard.owners.report import Tagging, TaggingReport
from costguard.owners.writer import OwnerTagWriter
from costguard.runtime import Runtime
from costguard.sagemaker import creations
from costguard.sagemaker.messages import unattributed as sagemaker_unattributed
from costguard.sagemaker.owners import SageMakerOwners
from costguard.state.cursors import WalkCursors

BACKFILL_INPUT = {"costguard": "backfill"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    if event == BACKFILL_INPUT:
        return backfill(runtime)
    if isinstance(event, dict) and isinstance(event.get("detail"), dict) and creations.is_sagemaker(event["detail"]):
        return tag_sagemaker(runtime, event)
    launch = parse_eventbridge_event(event)
    if isinstance(launch, Skipped):
        return _ignored(launch.reason)
    if launch.region not in runtime.settings.governed_regions:
        return _ignored(f"region {launch.region} is not governed")
    report = tag_launch(_writer(runtime, launch.region), launch, runtime.now())
    _emit(report)
    return {"status": "tagged", "region": launch.region, **report.summary()}


def backfill(runtime: Runtime) -> dict[str, Any]:
    settings = runtime.settings
    now = runtime.now()
    regions: dict[str, Any] = {}
    failures: dict[str, str] = {}

    def notify(results: Sequence[Tagging]) -> None:
        runtime.notifier.post(settings.alerts_channel, unattributed_message(results, settings.owner_tag_key))

    for region in settings.governed_regions:
        try:
            trail = CloudTrail(runtime.client("cloudtrail", region))
            cursors = WalkCursors(runtime.client("dynamodb"), settings.state_table, f"backfill:{region}")
            backfill = Backfill(_writer(runtime, region), trail, cursors=cursors, time_left=runtime.time_left)
            report = backfill.run(now, notify=notify)
            sagemaker = _backfill_sagemaker(runtime, region, trail) if _settings().sagemaker_governed else {}
        except Exception as exc:  # one region's failure must not stop the others' work
            logger.exception("backfill failed", region=region)
            failures[region] = f"{type(exc).__name__}: {exc}"
            continue
        _emit(report)
        regions[region] = {**report.summary(), **sagemaker}
    if failures:
        # Fail the invocation so the scheduler retries it; settled instances are not looked up again.
        raise RuntimeError(f"backfill failed in {len(failures)} region(s): {failures}")
    return {"status": "backfilled", "regions": regions}


def tag_sagemaker(runtime: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    """A SageMaker create call: the notebook instance, endpoint or Studio app tagged with its owner."""
    if event.get("detail-type") != "AWS API Call via CloudTrail":
        raise EventValidationError(f"detail-type {str(event.get('detail-type'))[:60]!r} is not a CloudTrail API call")
    if not _settings().sagemaker_governed:
        return _ignored("SageMaker governance is off")
    created = creations.parse_record(event["detail"])
    if isinstance(created, Skipped):
        return _ignored(created.reason)
    if created.region not in runtime.settings.governed_regions:
        return _ignored(f"region {created.region} is not governed")
    report = _sagemaker_owners(runtime, created.region).tag_creation(created, runtime.now())
    if report.unattributed:
        message = sagemaker_unattributed(report.unattributed, runtime.settings.owner_tag_key)
        runtime.notifier.post(runtime.settings.alerts_channel, message)
    return {"status": "tagged", "region": created.region, **report.summary()}


def _sagemaker_owners(runtime: Runtime, region: str) -> SageMakerOwners:
    settings = runtime.settings
    api = SageMaker(
        runtime.client("sagemaker", region),
        region,
        settings.mode,
        account=runtime.account,
        owner_tag_key=settings.owner_tag_key,
    )
    return SageMakerOwners(api=api, ledger=runtime.ledger, owner_tag_key=settings.owner_tag_key, mode=settings.mode)


def _backfill_sagemaker(runtime: Runtime, region: str, trail: CloudTrail) -> dict[str, Any]:
    """SageMaker resources without an owner, from CloudTrail's create calls; the unattributed are posted
    before anything is written, so that a failed post leaves them to tomorrow's run."""
    policy = _settings()
    report = _sagemaker_owners(runtime, region).backfill(
        trail, runtime.now(), accelerated=policy.is_accelerated_ml, time_left=runtime.time_left
    )
    if report.unattributed:
        message = sagemaker_unattributed(report.unattributed, runtime.settings.owner_tag_key)
        runtime.notifier.post(runtime.settings.alerts_channel, message)
    return report.summary()


@cache
def _settings() -> OwnerSettings:
    return OwnerSettings.from_env()


def _ignored(reason: str) -> dict[str, Any]:
    logger.info("event ignored", reason=reason)
    metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
    return {"status": "ignored", "reason": reason}


def _writer(runtime: Runtime, region: str) -> OwnerTagWriter:
    settings = runtime.settings
    return OwnerTagWriter(
        ec2=Ec2(runtime.client("ec2", region), region, settings.mode),
        autoscaling=runtime.client("autoscaling", region),
        ledger=runtime.ledger,
        owner_tag_key=settings.owner_tag_key,
        mode=settings.mode,
    )


def _emit(report: TaggingReport) -> None:
    summary = report.summary()
    metrics.add_metric(name="InstancesTagged", unit=MetricUnit.Count, value=summary["tagged"])
    metrics.add_metric(name="InstancesUnattributed", unit=MetricUnit.Count, value=len(summary["unattributed"]))
