"""idle_stopper: warns the owner of an idle GPU instance, stops it after the grace period if still idle.

Triggers: EventBridge Scheduler sweep ({"costguard": "sweep"}, every governed region); the state
change of a costguard idle alarm (one instance, fresh data); EC2 state changes (alarm lifecycle, and
each machine's starts and stops, for the working hours a warning may offer).
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.cloudwatch.alarms import IdleAlarms
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GpuSeriesFinder
from costguard.aws.ec2 import Ec2
from costguard.aws.ssm import Ssm
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.records import Skipped
from costguard.core.settings import IdlePolicy
from costguard.idle import events as idle_events
from costguard.idle.acts.starts import hours_offer
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.fortnights import Learner
from costguard.idle.report import RegionReport
from costguard.idle.sweep import IdleStopper
from costguard.runtime import Runtime
from costguard.state.checklog import CheckLog
from costguard.state.history import MachineHistory
from costguard.state.outbox import Outbox
from costguard.state.startlog import StartLog


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
    what = idle_events.parse(event)
    now = runtime.now()
    if not isinstance(what, Skipped | idle_events.Sweep) and what.region not in runtime.settings.governed_regions:
        what = Skipped(f"region {what.region} is not governed")
    if isinstance(what, Skipped):
        logger.info("event ignored", reason=what.reason)
        metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
        return {"status": "ignored", "reason": what.reason}
    failures: list[str] = []
    if isinstance(what, idle_events.Sweep):
        reports = {}
        for region in runtime.settings.governed_regions:
            try:
                reports[region] = _stopper(runtime, policy, region, context).sweep(now)
            except Exception as exc:  # one region's outage must not stop the others' sweep
                logger.exception("sweep failed", region=region)
                failures.append(f"{region}: {type(exc).__name__}: {exc}")
    elif isinstance(what, idle_events.AlarmFired):
        reports = {what.region: _stopper(runtime, policy, what.region, context).evaluate(what.instance_id, now)}
    else:
        stopper = _stopper(runtime, policy, what.region, context)
        reports = {what.region: stopper.on_state_change(what.instance_id, what.state)}
        _remember(runtime, what, now)
    _emit(reports)
    if failures:  # a region that could not be swept at all: Lambda's retries, then the DLQ and its alarm
        raise SweepIncomplete(f"{len(failures)} region(s) not swept: {failures[:5]}")
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


def _stopper(runtime: Runtime, policy: IdlePolicy, region: str, context: Any) -> IdleStopper:
    settings = runtime.settings
    cloudwatch = runtime.client("cloudwatch", region)
    ec2 = Ec2(runtime.client("ec2", region), region, settings.mode)
    checker = ActivityChecker(
        ssm=Ssm(runtime.client("ssm", region)),
        ec2=ec2,
        document=policy.activity_check_document,
        wait_seconds=policy.activity_check_seconds,
        time_left=runtime.time_left,
        sleep=runtime.sleep,
        clock=runtime.monotonic,
    )
    return IdleStopper(
        region=region,
        ec2=ec2,
        gpu_series=GpuSeriesFinder(cloudwatch),
        metrics=MetricReader(cloudwatch, policy),
        alarms=IdleAlarms(cloudwatch, policy),
        autoscaling=AutoScaling(runtime.client("autoscaling", region), settings.mode),
        ledger=runtime.ledger,
        claims=runtime.claims,
        outbox=Outbox(runtime.client("dynamodb"), settings.state_table, region, runtime.ledger),
        notifier=lambda: runtime.notifier,
        prices=runtime.prices,
        settings=settings,
        policy=policy,
        # Alarm state changes reach EventBridge in the alarm's region: only the home region has the rule.
        manage_alarms=region == settings.home_region,
        checker=checker,
        time_left=runtime.time_left,
        checklog=CheckLog(runtime.client("dynamodb"), settings.state_table),
        learner=Learner(
            metrics=MetricReader(cloudwatch, policy),
            history=MachineHistory(runtime.client("dynamodb"), settings.state_table),
            starts=StartLog(runtime.client("dynamodb"), settings.state_table),
            ledger=runtime.ledger,
            policy=policy,
            mode=settings.mode,
            owner_tag_key=settings.owner_tag_key,
        ),
        hours_for=hours_offer(MachineHistory(runtime.client("dynamodb"), settings.state_table)),
    )


def _remember(runtime: Runtime, change: idle_events.StateChanged, now: datetime) -> None:
    """A start or a stop, kept for the working hours the idle warning may offer. A nicety: a failed write
    is logged and counted, and the event (whose alarm work is done) is not retried for it."""
    if change.state not in ("running", "stopped"):
        return
    try:
        MachineHistory(runtime.client("dynamodb"), runtime.settings.state_table).record(
            change.instance_id, change.state, change.at or now
        )
    except (ClientError, BotoCoreError) as exc:
        logger.warning("state change not kept", instance_id=change.instance_id, error=str(exc)[:200])
        metrics.add_metric(name="StateChangesNotKept", unit=MetricUnit.Count, value=1)


def _emit(reports: dict[str, RegionReport]) -> None:
    counts: dict[str, int] = {}
    for report in reports.values():
        for outcome in report.outcomes:
            if outcome.applied:
                counts[outcome.action.value] = counts.get(outcome.action.value, 0) + 1
    for action in ("warn", "stop", "clear-warning", "cancel-stop", "protect", "unprotect"):
        metrics.add_metric(
            name=f"Idle{action.title().replace('-', '')}", unit=MetricUnit.Count, value=counts.get(action, 0)
        )
