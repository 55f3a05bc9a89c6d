"""owner_tagger: tags each launched instance (and its volumes) with its owner, and each SageMaker notebook
instance, endpoint and Studio app with its creator; daily backfill of both.

Triggers: EventBridge rules on CloudTrail RunInstances and on SageMaker's CreateNotebookInstance,
CreateEndpoint and CreateApp (real time, this region), and an EventBridge Scheduler schedule whose input is
{"costguard": "backfill"} (every governed region).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.ec2 import Ec2
from costguard.aws.sagemaker import SageMaker
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import OwnerSettings
from costguard.owners.tagging import OwnerTagger
from costguard.owners.writer import OwnerTagWriter
from costguard.runtime import Runtime
from costguard.sagemaker.owners import SageMakerOwners, SageMakerTagging
from costguard.sagemaker.rules.creations import is_sagemaker_event
from costguard.state.cursors import WalkCursors

BACKFILL_INPUT = {"costguard": "backfill"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    settings, options = runtime.settings, _settings()
    sagemaker = SageMakerTagging(
        owners_for=lambda region: _sagemaker_owners(runtime, region),
        notifier=runtime.notifier,
        channel=settings.alerts_channel,
        owner_tag_key=settings.owner_tag_key,
        regions=settings.governed_regions,
        governed=options.sagemaker_governed,
        accelerated=options.is_accelerated_ml,
        time_left=runtime.time_left,
    )
    tagger = OwnerTagger(
        writer_for=lambda region: _writer(runtime, region),
        trail_for=lambda region: CloudTrail(runtime.client("cloudtrail", region)),
        cursors_for=lambda region: WalkCursors(runtime.client("dynamodb"), settings.state_table, f"backfill:{region}"),
        notifier=runtime.notifier,
        channel=settings.alerts_channel,
        owner_tag_key=settings.owner_tag_key,
        regions=settings.governed_regions,
        time_left=runtime.time_left,
        also_backfill=sagemaker.backfill,
    )
    if event == BACKFILL_INPUT:
        return tagger.backfill(runtime.now())
    if is_sagemaker_event(event):
        return sagemaker.creation(event, runtime.now())
    return tagger.launch(event, runtime.now())


def _writer(runtime: Runtime, region: str) -> OwnerTagWriter:
    settings = runtime.settings
    ec2 = Ec2(runtime.client("ec2", region), region, settings.mode)
    autoscaling, key = runtime.client("autoscaling", region), settings.owner_tag_key
    return OwnerTagWriter(
        ec2=ec2, autoscaling=autoscaling, ledger=runtime.ledger, owner_tag_key=key, mode=settings.mode
    )


def _sagemaker_owners(runtime: Runtime, region: str) -> SageMakerOwners:
    settings, client = runtime.settings, runtime.client("sagemaker", region)
    api = SageMaker(client, region, settings.mode, account=runtime.account, owner_tag_key=settings.owner_tag_key)
    return SageMakerOwners(api=api, ledger=runtime.ledger, owner_tag_key=settings.owner_tag_key, mode=settings.mode)


@cache
def _settings() -> OwnerSettings:
    return OwnerSettings.from_env()
