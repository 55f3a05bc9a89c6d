"""deep_dive: the quarterly deep dive into EC2 spend, for the review meeting, in the digest channel with
a chart and a CSV of every line. Input: {"costguard": "deep-dive"}, by default the first Monday of
January, April, July and October (DeepDiveSchedule)."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import DeepDiveSettings, IdlePolicy
from costguard.core.shapes import shape
from costguard.digest.chart import BLUE, DOLLARS, GREY, Series, bar_chart
from costguard.digest.posting import Attachment, DigestIncomplete, post_with_files
from costguard.digest.quarterly.flow import QuarterCollector
from costguard.digest.quarterly.rules import Quarter, chart_bars, csv_text, quarter_message
from costguard.runtime import Runtime
from costguard.state.weeks import WeekRecords

DEEP_DIVE_INPUT = {"costguard": "deep-dive"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if event != DEEP_DIVE_INPUT:
        raise EventValidationError(f"deep_dive expects {DEEP_DIVE_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings = runtime.settings
    options = _settings()
    now = runtime.now()
    quarter = QuarterCollector(
        ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
        prices=runtime.prices,
        reader=runtime.commitments(),
        weeks=WeekRecords(runtime.client("dynamodb"), settings.state_table),
        policy=IdlePolicy.from_env(),
        account=runtime.account,
        governed_regions=settings.governed_regions,
        owner_tag_key=settings.owner_tag_key,
        team_tag_key=options.team_tag_key,
        jump_percent=options.jump_percent,
        jump_usd=options.jump_usd,
        region_threshold_usd=options.region_move_usd,
    ).collect(now)
    slug = quarter.label.lower().replace(" ", "-")
    posted = post_with_files(
        runtime.notifier,
        runtime.claims,
        key=f"deep-dive:{quarter.months[0]:%Y-%m}",
        channel=settings.digest_channel,
        message=lambda: quarter_message(quarter, now),
        attachments=[
            Attachment("chart", lambda: _chart(quarter), f"ec2-{slug}.png",
                       "EC2 compute a month: accelerated types and the rest"),
            Attachment("csv", lambda: csv_text(quarter).encode(), f"ec2-deep-dive-{slug}.csv",
                       "Every line, month by month"),
        ],
        now=now,
    )  # fmt: skip
    metrics.add_metric(name="DeepDiveLines", unit=MetricUnit.Count, value=len(quarter.lines))
    if posted.missing:
        raise DigestIncomplete(f"the deep dive's {posted.missing}")
    return {
        "status": "posted" if posted.posted else "already-posted",
        "quarter": quarter.label,
        "months": [f"{m:%Y-%m}" for m in quarter.months],
        "total_usd": round(sum(quarter.totals), 2),
        "lines": len(quarter.lines),
        "anomalies": len(quarter.anomalies),
        "anomaly_source": quarter.anomaly_source,
        "region_moves": sum(1 for r in quarter.regions if r.saving_usd >= quarter.region_threshold_usd),
        "weeks_recorded": len(quarter.weeks),
        "files": posted.files,
        "errors": quarter.errors,
    }


def _chart(quarter: Quarter) -> bytes:
    return bar_chart(
        chart_bars(quarter),
        title=f"EC2 compute cost a month, {quarter.label}",
        series=(Series("Accelerated types", BLUE), Series("Other EC2", GREY)),
        unit=DOLLARS,
    )


@cache
def _settings() -> DeepDiveSettings:
    return DeepDiveSettings.from_env()
