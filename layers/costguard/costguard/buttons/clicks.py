"""The buttons function's work: each queued click acted on in turn (ClickWorker), SageMaker's only where
costguard governs SageMaker, and each counted by what became of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.sagemaker import SageMaker
from costguard.buttons.sagemaker import SageMakerClicks
from costguard.buttons.worker import ClickWorker, Reply, no_sagemaker
from costguard.core.observability import metrics
from costguard.slack.interactions import Click


def sagemaker_clicks(
    governed: bool, sagemaker_for: Callable[[str], SageMaker], accelerated: Callable[[str], bool]
) -> Callable[[ClickWorker, Click, datetime], Reply]:
    """What a click on a SageMaker message does: acted on while SageMakerGovernance is on; else answered that
    costguard does not govern SageMaker in this account."""
    return SageMakerClicks(sagemaker_for=sagemaker_for, accelerated=accelerated) if governed else no_sagemaker


def handle_clicks(worker: ClickWorker, clicks: Sequence[Click], now: Callable[[], datetime]) -> dict[str, Any]:
    """Act on each click; an exception returns it to the queue for a retry."""
    done = []
    for click in clicks:
        reply = worker.handle(click, now())
        metrics.add_metric(name=f"ButtonClick{reply.status.title().replace('-', '')}", unit=MetricUnit.Count, value=1)
        done.append({"instance_id": click.instance_id, "button": click.button.value, "status": reply.status})
    return {"status": "done", "clicks": done}
