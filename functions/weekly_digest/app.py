"""weekly_digest: what the GPU fleet did, wasted and what costguard saved, posted to the digest channel
each week in the team's time, with a chart, and to each owner. Input: {"costguard": "digest"}."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GpuSeriesFinder
from costguard.aws.ec2 import Ec2
from costguard.aws.queues import Mailbox
from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.aws.ssm import Ssm
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.queues import sqs_queue_region, sqs_queue_url
from costguard.core.settings import DigestSettings, IdlePolicy, SageMakerPolicy
from costguard.core.shapes import shape
from costguard.digest.collection import DigestCollector, Region
from costguard.digest.sending import DigestIncomplete, record_week, send_digest
from costguard.runtime import Runtime
from costguard.sagemaker.week import SageMakerRegion, WeekCollector
from costguard.sagemaker.words.messages import digest_section
from costguard.slack.blocks import Block
from costguard.state.entries import Entry
from costguard.state.weeks import WeekRecords

WEEKLY_INPUT = {"costguard": "digest"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if event != WEEKLY_INPUT:
        raise EventValidationError(f"weekly_digest expects {WEEKLY_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings = runtime.settings
    policy = IdlePolicy.from_env()
    checked = bool(policy.activity_check_document)
    regions = [
        Region(
            name,
            Ec2(runtime.client("ec2", name), name, settings.mode),
            GpuSeriesFinder(runtime.client("cloudwatch", name)),
            MetricReader(runtime.client("cloudwatch", name), policy),
            runtime.client("cloudwatch", name),
            # The activity check runs in the deploy region: there, machines without an SSM agent are named.
            Ssm(runtime.client("ssm", name)) if checked and name == settings.home_region else None,
        )
        for name in settings.governed_regions
    ]
    collector = DigestCollector(
        regions=regions,
        prices=runtime.prices,
        ledger=runtime.ledger,
        reader=runtime.commitments(),
        ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
        policy=policy,
        owner_tag_key=settings.owner_tag_key,
        team_tag_key=_settings().team_tag_key,
    )
    now = runtime.now()
    data = collector.collect(now)
    data.sections = _sagemaker_section(runtime, data.entries, data.start, now)
    handoff = _settings().handoff_queue_arn
    unsent = record_week(
        data,
        WeekRecords(runtime.client("dynamodb"), settings.state_table),
        Mailbox(runtime.client("sqs", sqs_queue_region(sqs_queue_url(handoff))), sqs_queue_url(handoff))
        if handoff
        else None,
        account=runtime.account,
        label=_settings().account_label,
        regions=settings.governed_regions,
    )
    report = send_digest(
        data,
        notifier=runtime.notifier,
        claims=runtime.claims,
        channel=settings.digest_channel,
        email_domain=settings.email_domain,
        owner_digests=_settings().owner_digests,
        owner_digests_always=_settings().owner_digests_always,
        now=now,
        time_left=runtime.time_left,
    )
    if unsent:
        raise DigestIncomplete(f"{unsent}")  # the digest went out; the retry keeps and hands the week over again
    metrics.add_metric(name="DigestIdleGpuHours", unit=MetricUnit.Count, value=data.this_week.fleet.idle_gpu_hours)
    return {
        "status": "posted" if report.posted else "already-posted",
        "instances": data.this_week.fleet.instances,
        "idle_gpu_hours": data.this_week.fleet.idle_gpu_hours,
        "waste_usd": round(data.this_week.fleet.waste_usd, 2),
        "chart_file": report.chart_file,
        "owners_told": report.owners_told,
        "owners_quiet": report.owners_quiet,
        "owners_unreachable": report.owners_unreachable,
        "dashboards": data.dashboards,
        "handed_over": bool(handoff),
        "errors": data.errors,
    }


def _sagemaker_section(runtime: Runtime, entries: Sequence[Entry], start: datetime, now: datetime) -> list[Block]:
    """The digest's SageMaker part (its own collection, apart from the EC2 fleet's)."""
    policy = SageMakerPolicy.from_env()
    if not policy.governed:
        return []
    settings = runtime.settings
    regions = [
        SageMakerRegion(
            name,
            SageMaker(runtime.client("sagemaker", name), name, settings.mode, owner_tag_key=settings.owner_tag_key),
            SageMakerMetrics(runtime.client("cloudwatch", name)),
        )
        for name in settings.governed_regions
    ]
    week = WeekCollector(runtime.prices, policy, settings.owner_tag_key).collect(regions, entries, start, now)
    return digest_section(week)


@cache
def _settings() -> DigestSettings:
    return DigestSettings.from_env()
