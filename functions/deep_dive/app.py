"""deep_dive: the quarterly deep dive into EC2 spend, for the review meeting, in the digest channel with
a chart and a CSV of every line. Input: {"costguard": "deep-dive"}, by default the first Monday of
January, April, July and October (DeepDiveSchedule)."""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import DeepDiveSettings, IdlePolicy
from costguard.core.shapes import shape
from costguard.digest.quarterly.flow import QuarterCollector, deep_dive
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
    settings, (options, policy) = runtime.settings, _settings()
    collector = QuarterCollector(
        ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
        prices=runtime.prices,
        reader=runtime.commitments(),
        weeks=WeekRecords(runtime.client("dynamodb"), settings.state_table),
        policy=policy,
        account=runtime.account,
        governed_regions=settings.governed_regions,
        owner_tag_key=settings.owner_tag_key,
        team_tag_key=options.team_tag_key,
        jump_percent=options.jump_percent,
        jump_usd=options.jump_usd,
        region_threshold_usd=options.region_move_usd,
    )
    return deep_dive(
        collector, notifier=runtime.notifier, claims=runtime.claims, channel=settings.digest_channel, now=runtime.now()
    )


class _Settings(NamedTuple):
    deep_dive: DeepDiveSettings
    idle: IdlePolicy


@cache
def _settings() -> _Settings:
    """Read once per container, as every handler's settings are."""
    return _Settings(DeepDiveSettings.from_env(), IdlePolicy.from_env())
