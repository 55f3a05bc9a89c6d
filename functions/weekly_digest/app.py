"""weekly_digest: what the GPU fleet did, wasted and what costguard saved, posted to the digest channel
each week in the team's time, with a chart, and to each owner. Input: {"costguard": "digest"}."""

from __future__ import annotations

import gc
from functools import cache, partial
from typing import Any, NamedTuple

from costguard.aws.billing import BillingReader
from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.aws.queues import Mailbox
from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.queues import sqs_queue_region, sqs_queue_url
from costguard.core.settings import DigestSettings, IdlePolicy, SageMakerPolicy
from costguard.core.shapes import shape
from costguard.digest.weekly.collection import DigestCollector, Region
from costguard.digest.weekly.flow import Account, Recipients, Section, WeeklyDigest
from costguard.digest.weekly.restarts import RestartReader
from costguard.runtime import Runtime
from costguard.sagemaker.week import SageMakerRegion, WeekCollector
from costguard.sagemaker.words.messages import digest_section
from costguard.state.history import MachineHistory
from costguard.state.startlog import StartLog
from costguard.state.weeks import WeekRecords
from costguard.state.worth import WorthLog

WEEKLY_INPUT = {"costguard": "digest"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if event != WEEKLY_INPUT:
        raise EventValidationError(f"weekly_digest expects {WEEKLY_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings, (options, policy, sagemaker) = runtime.settings, _settings()
    queue = sqs_queue_url(options.handoff_queue_arn) if options.handoff_queue_arn else ""
    digest = WeeklyDigest(
        collector=DigestCollector(
            regions=[
                Region.reading(
                    name,
                    partial(runtime.client, region=name),
                    mode=settings.mode,
                    policy=policy,
                    # The activity check runs in the deploy region: there, machines without an SSM agent are named.
                    activity_check=bool(policy.activity_check_document) and name == settings.home_region,
                    bill=BillingReader(
                        ec2=runtime.client("ec2", name),
                        savingsplans=runtime.client("savingsplans", GLOBAL_ENDPOINT_REGION),
                        ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
                        region=name,
                    ),
                    metrics_client=runtime.clients.get("cloudwatch", name, bulk=True),
                )
                for name in settings.governed_regions
            ],
            prices=runtime.prices,
            ledger=runtime.ledger,
            reader=runtime.commitments(),
            ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
            policy=policy,
            owner_tag_key=settings.owner_tag_key,
            team_tag_key=options.team_tag_key,
            worth=WorthLog(runtime.client("dynamodb"), settings.state_table),
            restarts=RestartReader(
                MachineHistory(runtime.client("dynamodb"), settings.state_table),
                StartLog(runtime.client("dynamodb"), settings.state_table),
            ),
        ),
        records=WeekRecords(runtime.client("dynamodb"), settings.state_table),
        mailbox=Mailbox(runtime.client("sqs", sqs_queue_region(queue)), queue) if queue else None,
        notifier=runtime.notifier,
        claims=runtime.claims,
        account=Account(runtime.account, options.account_label, settings.governed_regions),
        recipients=Recipients(
            settings.digest_channel,
            settings.email_domain,
            options.owner_digests,
            options.owner_digests_always,
            alerts_channel=settings.alerts_channel,
        ),
        sections=[_sagemaker_section(runtime, sagemaker)] if sagemaker.governed else [],
        time_left=runtime.time_left,
    )
    # What the container keeps for its life (the modules, the AWS service models: hundreds of thousands of
    # objects) is left out of the garbage collector's passes while the fortnight is read: each full pass
    # walked all of it again (0.8 s of a 2,000-machine digest's 7.3 s of CPU, 0.47 s so); back after the run.
    gc.freeze()
    try:
        return digest.run(runtime.now())
    finally:
        gc.unfreeze()


def _sagemaker_section(runtime: Runtime, policy: SageMakerPolicy) -> Section:
    """The digest's SageMaker part (its own collection, apart from the EC2 fleet's)."""
    owner_tag_key, mode = runtime.settings.owner_tag_key, runtime.settings.mode
    regions = [
        SageMakerRegion(
            name,
            SageMaker(runtime.client("sagemaker", name), name, mode, owner_tag_key=owner_tag_key),
            SageMakerMetrics(runtime.client("cloudwatch", name)),
        )
        for name in runtime.settings.governed_regions
    ]
    collector = WeekCollector(runtime.prices, policy, owner_tag_key)
    return lambda entries, start, now: digest_section(collector.collect(regions, entries, start, now), now)


class _Settings(NamedTuple):
    digest: DigestSettings
    idle: IdlePolicy
    sagemaker: SageMakerPolicy


@cache
def _settings() -> _Settings:
    """Read once per container, as every handler's settings are."""
    return _Settings(DigestSettings.from_env(), IdlePolicy.from_env(), SageMakerPolicy.from_env())
