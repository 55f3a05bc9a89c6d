"""host_management: the stack's custom resource for DefaultHostManagement, Systems Manager's Default Host Management
Configuration turned on in each governed region where the account has not set it, and restored on delete
(costguard.setup.host_management). Trigger: CloudFormation (Create, Update, Delete); every request is answered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from costguard.core.observability import logger, metrics, tracer
from costguard.runtime import Runtime
from costguard.setup import host_management


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(
    event: Any,
    context: Any,
    runtime: Runtime | None = None,
    send: Callable[[str, Mapping[str, Any]], None] = host_management.send,
) -> dict[str, Any]:
    live = (runtime or Runtime.current()).start(context)
    result, physical_id = host_management.answer(event, lambda region: live.client("ssm", region))
    body = result.body(event, physical_id)
    send(str(event["ResponseURL"]), body)
    return body
