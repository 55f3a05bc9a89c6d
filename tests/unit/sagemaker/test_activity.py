"""What a notebook instance, an endpoint or a Studio app was seen doing (sagemaker/rules/activity)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from costguard.core import tags
from costguard.core.records import Price
from costguard.core.series import Signal
from costguard.core.settings import SageMakerPolicy
from costguard.sagemaker.rules.activity import Verdict, app_activity, endpoint_activity, notebook_activity
from costguard.sagemaker.rules.decision import Action, decide
from costguard.sagemaker.words.messages import (
    warning,
)
from costguard.slack.blocks import person
from costguard.slack.live import Live
from tests.unit.sagemaker.resources import (
    NOW,
    POLICY,
    daily,
    endpoint_resource,
    points,
    studio_app,
)


def test_a_notebook_is_idle_only_when_every_period_was_reported_quiet() -> None:
    start = NOW - timedelta(hours=2)
    quiet = {
        Signal.KERNEL_ACTIVITY: points(start, NOW, 0.0),
        Signal.GPU: points(start, NOW, 1.0),
        Signal.BUSIEST_CORE: points(start, NOW, 4.0),
    }

    def judged(series: Any, instance_type: str = "ml.g5.xlarge") -> Verdict:
        return notebook_activity(series, start=start, now=NOW, policy=POLICY, instance_type=instance_type).verdict

    assert judged(quiet) is Verdict.IDLE
    gap = {
        **quiet,
        Signal.KERNEL_ACTIVITY: [p for p in quiet[Signal.KERNEL_ACTIVITY] if p[0] != start + timedelta(minutes=30)],
    }
    assert judged(gap) is Verdict.INSUFFICIENT
    hot = {**quiet, Signal.GPU: [*quiet[Signal.GPU], (NOW - timedelta(minutes=20), 60.0)]}
    assert judged(hot) is Verdict.BUSY
    assert judged(None) is Verdict.INSUFFICIENT


def test_a_notebook_whose_busiest_core_works_outside_any_kernel_is_busy() -> None:
    # `nohup python prepare.py &` from a cell or a closed terminal: no kernel busy, no GPU, one core at 100%.
    # The script reported only kernels and GPUs, and the notebook was stopped under a running job.
    start = NOW - timedelta(hours=2)
    series = {
        Signal.KERNEL_ACTIVITY: points(start, NOW, 0.0),
        Signal.GPU: points(start, NOW, 0.0),
        Signal.BUSIEST_CORE: [
            *points(start, NOW - timedelta(minutes=30), 3.0),
            *points(NOW - timedelta(minutes=30), NOW, 99.0),
        ],
    }
    activity = notebook_activity(series, start=start, now=NOW, policy=POLICY, instance_type="ml.g5.xlarge")
    assert activity.verdict is Verdict.BUSY
    assert "CPU core" in activity.reason


def test_a_notebook_missing_its_cpu_or_gpu_reports_is_not_judged() -> None:
    start = NOW - timedelta(hours=2)
    kernels = points(start, NOW, 0.0)
    gpus = points(start, NOW, 0.0)
    cores = points(start, NOW, 2.0)

    def judged(series: Any, instance_type: str = "ml.g5.xlarge") -> Any:
        return notebook_activity(series, start=start, now=NOW, policy=POLICY, instance_type=instance_type)

    # An older lifecycle configuration (kernels and GPUs only) until the notebook is restarted: never judged.
    older = judged({Signal.KERNEL_ACTIVITY: kernels, Signal.GPU: gpus})
    assert older.verdict is Verdict.INSUFFICIENT
    assert "CPU" in older.reason
    # nvidia-smi answered nothing for a period, or never, on an NVIDIA type: its GPUs are not known quiet.
    gpu_gap = [p for p in gpus if p[0] != start + timedelta(minutes=45)]
    assert judged({Signal.KERNEL_ACTIVITY: kernels, Signal.GPU: gpu_gap, Signal.BUSIEST_CORE: cores}).verdict is (
        Verdict.INSUFFICIENT
    )
    no_gpu = judged({Signal.KERNEL_ACTIVITY: kernels, Signal.BUSIEST_CORE: cores})
    assert no_gpu.verdict is Verdict.INSUFFICIENT
    assert "GPU" in no_gpu.reason
    # Inferentia and Trainium have no nvidia-smi: no GPU reading is expected there.
    neuron = judged({Signal.KERNEL_ACTIVITY: kernels, Signal.BUSIEST_CORE: cores}, "ml.inf2.xlarge")
    assert neuron.verdict is Verdict.IDLE


def test_an_endpoint_is_a_zombie_only_when_its_instances_proved_the_metrics_flowed() -> None:
    window = NOW - timedelta(days=7)
    cpu = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0), Signal.INVOCATIONS: [(NOW - timedelta(days=20), 3.0)]}}
    zombie = endpoint_activity(endpoint_resource(), cpu, window_start=window, now=NOW)
    assert zombie.verdict is Verdict.IDLE
    assert zombie.last_invoked == NOW - timedelta(days=20)
    assert zombie.reason == f"no invocation in 7 days; last invoked {NOW - timedelta(days=20):%a %d %b}"
    invoked = {
        "churn-v2/AllTraffic": {**cpu["churn-v2/AllTraffic"], Signal.INVOCATIONS: [(NOW - timedelta(days=2), 1.0)]}
    }
    assert endpoint_activity(endpoint_resource(), invoked, window_start=window, now=NOW).verdict is Verdict.BUSY
    silent_day = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0, skip=3)}}
    assert (
        endpoint_activity(endpoint_resource(), silent_day, window_start=window, now=NOW).verdict is Verdict.INSUFFICIENT
    )
    assert endpoint_activity(endpoint_resource(), {}, window_start=window, now=NOW).verdict is Verdict.INSUFFICIENT


def test_a_studio_app_whose_user_activity_is_only_its_health_check_is_unseen_never_idle() -> None:
    # DescribeApp: LastUserActivityTimestamp "is also updated when SageMaker AI performs health checks without
    # user activity. As a result, this value is set to the same value as LastHealthCheckTimestamp" (API
    # reference, checked): a user who worked before the last health check is overwritten by it, so equal
    # timestamps say nothing about idleness. They were read as idle (and deleted with StudioAppsDelete).
    checked = NOW - timedelta(minutes=3)
    start = NOW - timedelta(hours=12)
    unseen = app_activity(studio_app(last_health_check=checked, last_user_activity=checked), start=start)
    assert unseen.verdict is Verdict.UNSEEN
    assert not unseen.idle
    assert "cannot tell" in unseen.reason
    only_health = app_activity(studio_app(last_health_check=checked), start=start)
    assert only_health.verdict is Verdict.UNSEEN
    used = studio_app(last_health_check=checked, last_user_activity=NOW - timedelta(hours=1))
    assert app_activity(used, start=start).verdict is Verdict.BUSY
    after_check = studio_app(last_health_check=NOW - timedelta(hours=1), last_user_activity=NOW - timedelta(minutes=1))
    assert app_activity(after_check, start=start).verdict is Verdict.BUSY
    # A user activity kept apart from a later health check, older than the window: SageMaker looked and saw none.
    apart = studio_app(last_health_check=checked, last_user_activity=NOW - timedelta(hours=15))
    assert app_activity(apart, start=start).verdict is Verdict.IDLE
    # No health check in the window (or none at all): SageMaker did not look; missing data is never idleness.
    stale = studio_app(last_health_check=NOW - timedelta(hours=13), last_user_activity=NOW - timedelta(hours=15))
    assert app_activity(stale, start=start).verdict is Verdict.INSUFFICIENT
    assert app_activity(studio_app(), start=start).verdict is Verdict.INSUFFICIENT


def test_a_studio_app_sagemaker_cannot_see_is_warned_once_and_never_deleted_even_with_deletion_on() -> None:
    checked = NOW - timedelta(minutes=3)
    policy = SageMakerPolicy(studio_apps_delete=True)
    app = studio_app(last_health_check=checked, last_user_activity=checked)
    activity = app_activity(app, start=NOW - timedelta(hours=12))
    first = decide(app, activity, policy, NOW)
    assert (first.action, first.will_act, first.act_after) == (Action.WARN, False, None)
    assert "cannot tell" in first.why_not
    message = Live((warning(app, first, Price(1.5, "pricing-api"), person("bob@example.com"), NOW),)).message()
    body = json.dumps(message.blocks)
    assert "costguard will not delete it" in body
    assert message.blocks[0]["text"]["text"].startswith("Long-running: Studio app · $")
    assert "has done no work" not in body, "it is not known to be idle"
    warned = studio_app(
        last_health_check=NOW + timedelta(minutes=57),
        last_user_activity=NOW + timedelta(minutes=57),
        tags={"Owner": "bob@example.com", tags.IDLE_WARNED_AT: "2026-11-24T12:00:00Z"},
    )
    later = NOW + timedelta(hours=1)
    again = decide(warned, app_activity(warned, start=later - timedelta(hours=12)), policy, later)
    assert again.action is Action.NONE
