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

from costguard.aws.sagemaker import SageMaker, SageMakerMetrics
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import SageMakerPolicy
from costguard.core.shapes import shape
from costguard.runtime import Runtime
from costguard.sagemaker.acts import SageMakerActs
from costguard.sagemaker.sweep import SageMakerSweep, sweep_regions

SWEEP_INPUT = {"costguard": "sagemaker-sweep"}


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
    regions = sweep_regions(
        lambda region: sweeper(runtime, policy, region), runtime.settings.governed_regions, runtime.now()
    )
    return {"status": "done", "mode": runtime.settings.mode.value, "regions": regions}


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
