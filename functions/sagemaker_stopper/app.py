"""sagemaker_stopper: warns the owner of an idle GPU notebook instance, Studio app or zombie endpoint; stops the
notebook instance after the grace period, and deletes the app or the endpoint only when their switch is on.
Reports Studio settings without idle shutdown once a week.

Trigger: an EventBridge Scheduler schedule whose input is {"costguard": "sagemaker-sweep"} (every governed
region). A function of its own, apart from the EC2 idle stopper: its own role (SageMaker rights only), its own
schedule and timeout, and an EC2 sweep that a slow SageMaker API can never delay.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.core.errors import CostguardError, EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import SageMakerPolicy
from costguard.core.shapes import shape
from costguard.runtime import Runtime
from costguard.sagemaker.acts import SageMakerActs
from costguard.sagemaker.report import SweepReport
from costguard.sagemaker.sweep import SageMakerSweep

SWEEP_INPUT = {"costguard": "sagemaker-sweep"}


class SweepIncomplete(CostguardError):
    """Some work failed in a way a retry can fix (Slack outage, throttling): fail so the run is retried."""


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(
    event: Any, context: Any, runtime: Runtime | None = None, policy: SageMakerPolicy | None = None
) -> dict[str, Any]:
    if event != SWEEP_INPUT:
        raise EventValidationError(f"sagemaker_stopper expects {SWEEP_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    policy = policy or _policy()
    now = runtime.now()
    reports: dict[str, SweepReport] = {}
    failures: list[str] = []
    for region in runtime.settings.governed_regions:
        try:
            reports[region] = sweeper(runtime, policy, region).run(now)
        except Exception as exc:  # one region's outage must not stop the others' sweep
            logger.exception("sagemaker sweep failed", region=region)
            failures.append(f"{region}: {type(exc).__name__}: {exc}")
    for report in reports.values():
        for action in ("warn", "act"):
            done = sum(1 for o in report.outcomes if o.action.value == action and o.applied)
            metrics.add_metric(name=f"SageMaker{action.title()}", unit=MetricUnit.Count, value=done)
    errors = failures + [e for r in reports.values() for e in r.retryable]
    if errors:
        raise SweepIncomplete(f"{len(errors)} action(s) to retry: {errors[:5]}")
    return {
        "status": "done",
        "mode": runtime.settings.mode.value,
        "regions": {k: v.summary() for k, v in reports.items()},
    }


def sweeper(runtime: Runtime, policy: SageMakerPolicy, region: str) -> SageMakerSweep:
    settings = runtime.settings
    api = SageMaker(
        runtime.client("sagemaker", region),
        region,
        settings.mode,
        account=runtime.account,
        owner_tag_key=settings.owner_tag_key,
    )
    acts = SageMakerActs(
        api=api,
        prices=runtime.prices,
        ledger=runtime.ledger,
        claims=runtime.claims,
        notifier=lambda: runtime.notifier,
        settings=settings,
        policy=policy,
        time_left=runtime.time_left,
    )
    return SageMakerSweep(
        region=region,
        api=api,
        metrics=SageMakerMetrics(runtime.client("cloudwatch", region)),
        acts=acts,
        policy=policy,
        mode=settings.mode,
        time_left=runtime.time_left,
    )


@cache
def _policy() -> SageMakerPolicy:
    return SageMakerPolicy.from_env()
