"""organization_digest (the hub only): the organization's week in the digest channel, a section per
account and the totals, with a chart; the accounts that did not hand their week over are named.
Input: {"costguard": "organization-digest"}, scheduled after every account's weekly digest."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.queues import Mailbox
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import OrganizationSettings
from costguard.core.shapes import shape
from costguard.digest.chart import week_chart
from costguard.digest.organization.flow import gather
from costguard.digest.organization.rules import chart_days, organization_message
from costguard.digest.posting import DigestIncomplete, chart, post_with_files
from costguard.runtime import Runtime
from costguard.state.handoffs import HandedWeeks

ORGANIZATION_INPUT = {"costguard": "organization-digest"}
ORGANIZATION_TITLE = "GPU-hours a day across the organization, used and idle"


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if event != ORGANIZATION_INPUT:
        raise EventValidationError(f"organization_digest expects {ORGANIZATION_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings = _settings()
    now = runtime.now()
    org = gather(
        Mailbox(runtime.client("sqs"), settings.queue_url),
        HandedWeeks(runtime.client("dynamodb"), runtime.settings.state_table),
        settings.expected(runtime.account),
        now=now,
        time_left=runtime.time_left,
    )
    week = f"{now:%G-W%V}"
    posted = post_with_files(
        runtime.notifier,
        runtime.claims,
        key=f"organization-digest:{week}",
        channel=runtime.settings.digest_channel,
        message=lambda: organization_message(org),
        attachments=[
            chart(lambda: week_chart(chart_days(org), ORGANIZATION_TITLE), f"gpu-week-organization-{week}.png")
        ],
        now=now,
    )
    metrics.add_metric(name="OrganizationAccountsMissing", unit=MetricUnit.Count, value=len(org.missing))
    if posted.missing:
        raise DigestIncomplete(f"the organization digest's {posted.missing}")
    return {
        "status": "posted" if posted.posted else "already-posted",
        "accounts": [w.account for w in org.fresh],
        "missing": [account for account, _ in org.missing],
        "refused": org.refused,
        "idle_gpu_hours": round(sum(w.idle_gpu_hours for w in org.fresh), 3),
        "waste_usd": round(sum(w.waste_usd for w in org.fresh), 2),
        "chart_file": (posted.files or [""])[0],
    }


@cache
def _settings() -> OrganizationSettings:
    return OrganizationSettings.from_env()
