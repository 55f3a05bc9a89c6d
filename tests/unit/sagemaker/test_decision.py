"""The SageMaker sweep's decision for one resource (sagemaker/rules/decision)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from costguard.core import tags
from costguard.core.sagemaker import Variant
from costguard.core.series import Signal
from costguard.core.settings import Mode, SageMakerPolicy
from costguard.sagemaker.rules.activity import Verdict, endpoint_activity, notebook_activity
from costguard.sagemaker.rules.decision import Action, decide, judged_from
from tests.unit.sagemaker.resources import (
    NOW,
    POLICY,
    daily,
    endpoint_resource,
    idle,
    notebook_resource,
    points,
)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tags": {tags.EXEMPT: "A/B challenger"}}, "exempt: A/B challenger"),
        ({"tags": {tags.KEEP_UNTIL: "2026-12-01T00:00:00Z"}}, "kept until 2026-12-01T00:00:00Z"),
        ({"asynchronous": True}, "asynchronous endpoint"),
        ({"variants": (Variant("AllTraffic", "", 0, serverless=True),)}, "serverless or scaled to zero"),
        ({"variants": (Variant("AllTraffic", "ml.g5.xlarge", 1, min_instances=0),)}, "scales to zero"),
        ({"instance_type": "ml.m5.xlarge"}, "not an accelerated type"),
        ({"since": NOW - timedelta(days=2)}, "less than its 168-h window"),
    ],
)
def test_endpoints_costguard_must_not_act_on_are_skipped_with_why(changes: dict[str, Any], reason: str) -> None:
    resource = endpoint_resource(**changes)
    decision = decide(resource, idle(endpoint_resource()), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    assert decision.action is Action.SKIP
    assert reason in decision.reason


def test_a_zombie_endpoint_is_deleted_only_after_a_delivered_warning_the_grace_and_with_its_switch() -> None:
    policy = SageMakerPolicy(endpoints_delete=True)
    first = decide(endpoint_resource(), idle(endpoint_resource()), policy, NOW)  # type: ignore[arg-type]
    assert (first.action, first.act_after) == (Action.WARN, NOW + timedelta(hours=24))
    warned = endpoint_resource(
        tags={tags.IDLE_WARNED_AT: "2026-11-24T12:00:00Z", tags.STOP_AFTER: "2026-11-25T12:00:00Z"}
    )
    later = NOW + timedelta(hours=25)
    cpu = {"churn-v2/AllTraffic": {Signal.CPU: daily(9, 2.0, now=later)}}
    activity = endpoint_activity(warned, cpu, window_start=later - timedelta(days=7), now=later)
    assert decide(warned, activity, policy, later).action is Action.ACT
    assert decide(warned, activity, SageMakerPolicy(), later).action is Action.NONE, "deletion off: warned, kept"
    assert decide(warned, activity, policy, later, mode=Mode.NOTIFY_ONLY).action is Action.NONE


def test_an_exempt_resource_keeps_its_old_warning_tags_since_costguard_may_not_tag_it() -> None:
    # IAM lets costguard write no tag on a costguard:exempt resource (TagIdleStateOnly); clearing the warning
    # was refused every sweep, and each refusal failed the run (a retry, then the dead-letter queue).
    warned = {tags.IDLE_WARNED_AT: "2026-11-24T10:00:00Z", tags.STOP_AFTER: "2026-11-25T10:00:00Z"}
    exempt = endpoint_resource(tags={**warned, tags.EXEMPT: "demo day"})
    decision = decide(exempt, idle(exempt), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    assert (decision.action, decision.reason) == (Action.SKIP, "exempt: demo day")
    kept = endpoint_resource(tags={**warned, tags.KEEP_UNTIL: "2026-12-01T00:00:00Z"})
    assert decide(kept, idle(kept), SageMakerPolicy(), NOW).action is Action.CLEAR_WARNING  # type: ignore[arg-type]


def test_a_warning_from_days_ago_is_given_again_not_acted_on() -> None:
    # Warned two days ago, then exempt for a while (or the sweeps failed): the data was read back to the old
    # warning, found quiet all along, and the notebook was stopped on a warning its owner read two days ago.
    warned_at = NOW - timedelta(days=2)
    old = {tags.IDLE_WARNED_AT: f"{warned_at:%Y-%m-%dT%H:%M:%SZ}", tags.STOP_AFTER: "2026-11-22T12:30:00Z"}
    nb = notebook_resource(tags={"Owner": "alice@example.com", **old})
    start = judged_from(nb, POLICY, NOW)
    assert start == NOW - timedelta(minutes=POLICY.notebook_window_minutes)
    quiet = {
        Signal.KERNEL_ACTIVITY: points(warned_at, NOW, 0.0),
        Signal.GPU: points(warned_at, NOW, 0.0),
        Signal.BUSIEST_CORE: points(warned_at, NOW, 0.0),
    }
    activity = notebook_activity(quiet, start=start, now=NOW, policy=POLICY, instance_type="ml.g5.xlarge")
    decision = decide(nb, activity, POLICY, NOW)
    assert decision.action is Action.WARN
    assert decision.act_after == NOW + timedelta(minutes=POLICY.grace_minutes)
    # A warning within its grace and a sweep's delay still reads the data back to it, and acts.
    recent = NOW - timedelta(minutes=45)
    fresh = notebook_resource(
        tags={tags.IDLE_WARNED_AT: f"{recent:%Y-%m-%dT%H:%M:%SZ}", tags.STOP_AFTER: "2026-11-24T11:45:00Z"}
    )
    assert judged_from(fresh, POLICY, NOW) == NOW - timedelta(minutes=POLICY.notebook_window_minutes)
    long_grace = SageMakerPolicy(grace_minutes=180)
    assert judged_from(fresh, long_grace, NOW) == NOW - timedelta(minutes=POLICY.notebook_window_minutes)
    slow = notebook_resource(
        tags={tags.IDLE_WARNED_AT: f"{NOW - timedelta(minutes=195):%Y-%m-%dT%H:%M:%SZ}", tags.STOP_AFTER: "x"}
    )
    assert judged_from(slow, long_grace, NOW) == NOW - timedelta(minutes=195)


def test_an_invocation_in_the_day_that_straddles_the_window_start_counts_as_in_the_window() -> None:
    # CloudWatch answers a one-day period with buckets aligned on the query's start (rounded), not on midnight
    # nor on the window: the point at window_start - 6 h sums calls up to window_start + 18 h.
    window = NOW - timedelta(days=7)
    series = {
        "churn-v2/AllTraffic": {
            Signal.CPU: daily(8, 2.0),
            Signal.INVOCATIONS: [(window - timedelta(hours=6), 12.0)],
        }
    }
    activity = endpoint_activity(endpoint_resource(), series, window_start=window, now=NOW)
    assert activity.verdict is Verdict.BUSY
    before = {
        "churn-v2/AllTraffic": {
            **series["churn-v2/AllTraffic"],
            Signal.INVOCATIONS: [(window - timedelta(days=1), 1.0)],
        }
    }
    assert endpoint_activity(endpoint_resource(), before, window_start=window, now=NOW).verdict is Verdict.IDLE


def test_an_endpoint_hosting_inference_components_or_asynchronous_is_not_judged_on_variant_invocations() -> None:
    components = endpoint_resource(variants=(Variant("AllTraffic", "ml.g5.xlarge", 1, inference_components=True),))
    decision = decide(components, idle(components), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    assert decision.action is Action.SKIP
    assert "inference components" in decision.reason
    asynchronous = endpoint_resource(asynchronous=True)
    decision = decide(asynchronous, idle(asynchronous), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    assert decision.action is Action.SKIP
    assert "publishes no Invocations" in decision.reason
    assert "costs nothing" not in decision.reason, "an asynchronous endpoint scales to zero only if told to"
