"""commitment_tracker: daily reminders before Reserved Instances and Savings Plans expire, saying
what to do, and alerts when one is under-used. Trigger: EventBridge Scheduler, {"costguard": "commitments"}.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.commitments.check import CommitmentTracker
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import CommitmentSettings
from costguard.core.shapes import shape
from costguard.runtime import Runtime

DAILY_INPUT = {"costguard": "commitments"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if event != DAILY_INPUT:
        raise EventValidationError(f"commitment_tracker expects {DAILY_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings = runtime.settings
    policy = _settings()
    tracker = CommitmentTracker(
        reader=runtime.commitments(),
        claims=runtime.claims,
        notifier=runtime.notifier,
        channel=settings.alerts_channel,
        lead_days=policy.lead_days,
        utilization_threshold=policy.utilization_threshold,
    )
    report = tracker.run(runtime.now())
    metrics.add_metric(name="CommitmentReminders", unit=MetricUnit.Count, value=len(report.reminders))
    metrics.add_metric(name="CommitmentsUnderused", unit=MetricUnit.Count, value=len(report.underused))
    return {"status": "done", **report.summary()}


@cache
def _settings() -> CommitmentSettings:
    return CommitmentSettings.from_env()
