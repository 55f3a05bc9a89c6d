"""organization_digest (the hub only): the organization's week in the digest channel, a section per
account and the totals, with a chart; the accounts that did not hand their week over are named.
Input: {"costguard": "organization-digest"}, scheduled after every account's weekly digest; or CloudFormation's
StackSet StackInstance Status Change event of a failure of the members' StackSet, told in the alerts channel."""

from __future__ import annotations

from functools import cache
from typing import Any

from costguard.aws.queues import Mailbox
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import OrganizationSettings
from costguard.core.shapes import shape
from costguard.digest.organization.flow import organization_digest, tell_stackset_failure
from costguard.digest.organization.stacksets import is_stackset_event
from costguard.digest.organization.units import accounts_of_units
from costguard.runtime import Runtime
from costguard.state.handoffs import HandedWeeks

ORGANIZATION_INPUT = {"costguard": "organization-digest"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    if is_stackset_event(event):  # the members' StackSet failed in an account (template: StackSetFailed)
        runtime = (runtime or Runtime.current()).start(context)
        return tell_stackset_failure(
            event,
            notifier=runtime.notifier,
            claims=runtime.claims,
            channel=runtime.settings.alerts_channel,
            now=runtime.now(),
            admin_region=runtime.settings.home_region,
        )
    if event != ORGANIZATION_INPUT:
        raise EventValidationError(f"organization_digest expects {ORGANIZATION_INPUT}, got {shape(event)}")
    runtime = (runtime or Runtime.current()).start(context)
    settings = _settings()
    units = accounts_of_units(
        settings.expected(runtime.account),
        runtime.client("organizations"),
        runtime.client("cloudformation"),
        HandedWeeks(runtime.client("dynamodb"), runtime.settings.state_table),
        units=settings.units,
        stack_set=settings.stack_set,
    )
    return organization_digest(
        Mailbox(runtime.client("sqs"), settings.queue_url),
        HandedWeeks(runtime.client("dynamodb"), runtime.settings.state_table),
        units.expected,
        notifier=runtime.notifier,
        claims=runtime.claims,
        channel=runtime.settings.digest_channel,
        now=runtime.now(),
        time_left=runtime.time_left,
        any_account=bool(settings.organization_id),
        units=units if settings.units else None,
    )


@cache
def _settings() -> OrganizationSettings:
    return OrganizationSettings.from_env()
