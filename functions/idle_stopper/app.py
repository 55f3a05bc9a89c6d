"""idle_stopper: warns the owner of an idle GPU instance, stops it after the grace period if still idle.

Triggers: EventBridge Scheduler sweep ({"costguard": "sweep"}, every governed region); the state
change of a costguard idle alarm (one instance, fresh data); EC2 state changes (alarm lifecycle, and
each machine's starts and stops, for the working hours a warning may offer).
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.core.formatting import plural
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.records import Skipped
from costguard.core.settings import IdlePolicy
from costguard.idle import events as idle_events
from costguard.idle.report import METRIC_ACTIONS, applied_counts
from costguard.idle.sweep import idle_stopper, run
from costguard.runtime import Runtime


class SweepIncomplete(RuntimeError):
    """A region could not be swept at all: fail so that Lambda retries the run (and, failing, dead-letters it)."""


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(
    event: Any, context: Any, runtime: Runtime | None = None, policy: IdlePolicy | None = None
) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    policy = policy or _policy()
    regions = runtime.settings.governed_regions
    what = idle_events.governed(idle_events.parse(event), regions)
    if isinstance(what, Skipped):
        logger.info("event ignored", reason=what.reason)
        metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
        return {"status": "ignored", "reason": what.reason}
    reports, failures = run(what, partial(idle_stopper, runtime, policy), regions, runtime.now())
    counts = applied_counts(reports.values())
    for action in METRIC_ACTIONS:
        metrics.add_metric(name=f"Idle{action.title().replace('-', '')}", unit=MetricUnit.Count, value=counts[action])
    if failures:  # a region that could not be swept at all: Lambda's retries, then the DLQ and its alarm
        raise SweepIncomplete(f"{plural(len(failures), 'region')} not swept: {failures[:5]}")
    # Writes a storm refused and Slack work left undone are the next sweep's (15 minutes later), as a
    # retry would be: the run ends normally with what it finished recorded, and says what is left.
    left = [e for r in reports.values() for e in r.retryable_errors]
    if left:
        logger.warning("left to the next sweep", count=len(left), errors=left[:20])
    metrics.add_metric(name="IdleLeftToNextSweep", unit=MetricUnit.Count, value=len(left))
    return {
        "status": "done",
        "mode": runtime.settings.mode.value,
        "regions": {k: v.summary() for k, v in reports.items()},
    }


@cache
def _policy() -> IdlePolicy:
    return IdlePolicy.from_env()
