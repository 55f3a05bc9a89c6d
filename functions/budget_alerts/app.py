"""budget_alerts: turns AWS Budgets notifications (via SNS) into tiered Slack alerts that say who and
what is driving the spend, and Cost Anomaly Detection alerts (via SNS or EventBridge) into one message
per anomaly, edited as AWS re-sends it. A notification it cannot read is posted raw, never dropped; the
same tier of the same budget and month is posted once, however often SNS delivers it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.aws.costexplorer import CostExplorer
from costguard.budgets.alerting import handle_event
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import BudgetSettings
from costguard.runtime import Runtime


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    settings = runtime.settings

    def explorer() -> CostExplorer:
        return CostExplorer(
            runtime.client("ce", GLOBAL_ENDPOINT_REGION, quick=True),
            settings.owner_tag_key,
            _budget_settings().ec2_only,
        )

    handled = handle_event(
        event,
        explorer=explorer,
        claims=runtime.claims,
        notifier=runtime.notifier,
        channel=settings.alerts_channel,
        now=runtime.now(),
    )
    return {"status": "done", "notifications": handled}


@cache
def _budget_settings() -> BudgetSettings:
    return BudgetSettings.from_env()
