"""SageMaker's pure parts: the CloudTrail create records, owners, activity judgements, decisions, clicks."""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costguard.aws.costexplorer import sagemaker_usage
from costguard.aws.pricing import PriceBook
from costguard.core import tags
from costguard.core.errors import EventValidationError
from costguard.core.ownership import OwnerSource, decide_owner
from costguard.core.records import Price, Skipped
from costguard.core.sagemaker import IdleSetting, Kind, Resource, Variant
from costguard.core.series import Signal
from costguard.core.settings import Mode, SageMakerPolicy
from costguard.sagemaker.rules.activity import Activity, Verdict, app_activity, endpoint_activity, notebook_activity
from costguard.sagemaker.rules.creations import Creation, app_owner, parse_record
from costguard.sagemaker.rules.decision import Action, Decision, decide, judged_from
from costguard.sagemaker.rules.figures import SageMakerWeek, Zombie
from costguard.sagemaker.rules.shutdown import shutdown_findings
from costguard.sagemaker.week import SageMakerRegion, WeekCollector
from costguard.sagemaker.words.messages import (
    act_failed_notice,
    act_notice,
    digest_section,
    dry_run_notice,
    idle_settings_report,
    unattributed,
    warning,
)
from costguard.slack.buttons import Button, sagemaker_keep_buttons
from costguard.slack.interactions import Click, parse_interaction
from testing.handlers import load_event
from tests.unit.test_hostile_text import assert_harmless, hostile

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
POLICY = SageMakerPolicy()


def record(name: str) -> dict[str, Any]:
    return load_event(f"owner_tagger/{name}")["detail"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ CloudTrail create records (AWS's shapes)


def test_create_endpoint_as_aws_documents_it_names_the_endpoint_and_its_iam_user() -> None:
    created = parse_record(record("sagemaker-createendpoint.json"))
    assert isinstance(created, Creation)
    assert (created.kind, created.name, created.region) == (Kind.ENDPOINT, "ExampleEndpoint", "us-east-1")
    assert created.arn == "arn:aws:sagemaker:us-east-1:123456789012:endpoint/exampleendpoint"
    owner = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert (owner.owner, owner.source) == ("intern", OwnerSource.IAM_USER)


def test_create_notebook_instance_by_an_identity_center_user_is_theirs() -> None:
    created = parse_record(record("sagemaker-createnotebookinstance.json"))
    assert isinstance(created, Creation)
    assert created.key == "notebook/alice-research"
    owner = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert (owner.owner, owner.source) == ("alice@example.com", OwnerSource.IDENTITY_CENTER)


def test_create_app_by_studios_execution_role_names_the_app_and_the_propagated_profile() -> None:
    created = parse_record(record("sagemaker-createapp.json"))
    assert isinstance(created, Creation)
    assert created.name == "d-abc123def456/user.bob/JupyterLab/default"
    assert created.identity.source_identity == "bob"
    role_says = decide_owner(created.identity, existing_tags={}, owner_tag_key="Owner")
    assert role_says.owner == "SageMaker", "a session name, which names no person"
    by_profile = app_owner(role_says, {"Owner": "bob@example.com"}, "Owner", "user bob")
    assert (by_profile.owner, by_profile.source) == ("bob@example.com", OwnerSource.GROUP_TAG)
    nobody = app_owner(role_says, {}, "Owner", "user bob")
    assert nobody.owner is None
    assert nobody.source is OwnerSource.UNKNOWN


def test_failed_or_ungoverned_create_calls_are_skipped_and_hostile_names_refused() -> None:
    failed = {**record("sagemaker-createendpoint.json"), "errorCode": "ValidationException"}
    assert isinstance(parse_record(failed), Skipped)
    canvas = record("sagemaker-createapp.json")
    canvas["requestParameters"] = {**canvas["requestParameters"], "appType": "Canvas"}
    assert isinstance(parse_record(canvas), Skipped)
    hostile = record("sagemaker-createnotebookinstance.json")
    hostile["requestParameters"] = {**hostile["requestParameters"], "notebookInstanceName": "<!channel>"}
    with pytest.raises(EventValidationError):
        parse_record(hostile)


# ------------------------------------------------------------------ what was seen


def points(start: datetime, end: datetime, value: float, step: int = 5) -> list[tuple[datetime, float]]:
    out, at = [], start
    while at < end:
        out.append((at, value))
        at += timedelta(minutes=step)
    return out


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


def endpoint_resource(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.ENDPOINT,
        "name": "churn-v2",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/churn-v2",
        "instance_type": "ml.g5.xlarge",
        "status": "InService",
        "since": NOW - timedelta(days=30),
        "config_name": "churn-v2-config",
        "variants": (Variant("AllTraffic", "ml.g5.xlarge", 2),),
        "tags": {"Owner": "bob@example.com"},
    }
    return Resource(**{**base, **kwargs})


def daily(days: int, value: float, skip: int | None = None, now: datetime = NOW) -> list[tuple[datetime, float]]:
    """A point per day at midnight, as CloudWatch answers a one-day period, for the `days` before today."""
    midnight = now.replace(hour=0)
    return [(midnight - timedelta(days=d), value) for d in range(1, days + 1) if d != skip]


def test_an_endpoint_is_a_zombie_only_when_its_instances_proved_the_metrics_flowed() -> None:
    window = NOW - timedelta(days=7)
    cpu = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0), Signal.INVOCATIONS: [(NOW - timedelta(days=20), 3.0)]}}
    zombie = endpoint_activity(endpoint_resource(), cpu, window_start=window, now=NOW)
    assert zombie.verdict is Verdict.IDLE
    assert zombie.last_invoked == NOW - timedelta(days=20)
    invoked = {
        "churn-v2/AllTraffic": {**cpu["churn-v2/AllTraffic"], Signal.INVOCATIONS: [(NOW - timedelta(days=2), 1.0)]}
    }
    assert endpoint_activity(endpoint_resource(), invoked, window_start=window, now=NOW).verdict is Verdict.BUSY
    silent_day = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0, skip=3)}}
    assert (
        endpoint_activity(endpoint_resource(), silent_day, window_start=window, now=NOW).verdict is Verdict.INSUFFICIENT
    )
    assert endpoint_activity(endpoint_resource(), {}, window_start=window, now=NOW).verdict is Verdict.INSUFFICIENT


def studio_app(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.APP,
        "name": "d-abc123def456/user.bob/JupyterLab/default",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:app/d-abc123def456/bob/jupyterlab/default",
        "instance_type": "ml.g5.2xlarge",
        "status": "InService",
        "since": NOW - timedelta(hours=20),
        "tags": {"Owner": "bob@example.com"},
    }
    return Resource(**{**base, **kwargs})


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
    message = warning(app, first, Price(1.5, "pricing-api"), "bob@example.com", NOW)
    body = json.dumps(message.blocks)
    assert "never automatically" in body
    assert "has done no work" not in body, "it is not known to be idle"
    warned = studio_app(
        last_health_check=NOW + timedelta(minutes=57),
        last_user_activity=NOW + timedelta(minutes=57),
        tags={"Owner": "bob@example.com", tags.IDLE_WARNED_AT: "2026-11-24T12:00:00Z"},
    )
    later = NOW + timedelta(hours=1)
    again = decide(warned, app_activity(warned, start=later - timedelta(hours=12)), policy, later)
    assert again.action is Action.NONE


# ------------------------------------------------------------------ decisions


def idle(resource: Resource) -> object:
    start = NOW - timedelta(days=7)
    series = {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0)}}
    return endpoint_activity(resource, series, window_start=start, now=NOW)


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


def test_the_warning_says_what_a_zombie_cost_since_its_last_invocation_and_a_day() -> None:
    activity = endpoint_activity(
        endpoint_resource(),
        {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0), Signal.INVOCATIONS: daily(11, 4.0)[-1:]}},
        window_start=NOW - timedelta(days=7),
        now=NOW,
    )
    decision = decide(endpoint_resource(), activity, SageMakerPolicy(), NOW)
    message = warning(endpoint_resource(), decision, Price(1.5, "pricing-api"), "bob@example.com", NOW)
    body = json.dumps(message.blocks, ensure_ascii=False)
    assert "never automatically: endpoint deletion is off (EndpointsDelete)" in body
    assert "$3.00/h × 2 instances · $72/day" in body
    # Invoked on Fri 13 Nov: from the end of that day to now, 10 days and 12 h at $3/h.
    assert "*Cost since its last invocation (Fri 13 Nov)*\\n$756" in body


def test_studio_settings_report_what_is_off_or_longer_than_the_window() -> None:
    found = shutdown_findings(
        [
            IdleSetting("domain", "d-1", "research", "JupyterLab", None, None),
            IdleSetting("domain", "d-1", "research", "CodeEditor", True, 60),
            IdleSetting("user profile", "d-1", "bob", "JupyterLab", None, None),  # inherits: not reported
            IdleSetting("space", "d-1", "team", "JupyterLab", True, 600),
            IdleSetting("user profile", "d-1", "carol", "CodeEditor", False, None),
        ],
        120,
    )
    assert [(f.scope, f.name, f.app_type) for f in found] == [
        ("domain", "research", "JupyterLab"),
        ("space", "team", "JupyterLab"),
        ("user profile", "carol", "CodeEditor"),
    ]


def test_only_ml_types_of_the_accelerator_families_are_governed() -> None:
    assert POLICY.is_accelerated("ml.g5.xlarge")
    assert POLICY.is_accelerated("ml.p4d.24xlarge")
    assert not POLICY.is_accelerated("ml.m5.xlarge")
    assert not POLICY.is_accelerated("g5.xlarge")  # an EC2 type, not SageMaker's
    assert not POLICY.is_accelerated("system")


def test_sagemaker_usage_types_read_as_people_say_them() -> None:
    assert sagemaker_usage("USE1-Notebk:ml.g5.xlarge") == "ml.g5.xlarge notebook instances (USE1)"
    assert sagemaker_usage("EUW1-Host:ml.p4d.24xlarge") == "ml.p4d.24xlarge endpoints (EUW1)"
    assert sagemaker_usage("USE1-Studio-Notebk:ml.g5.2xlarge") == "ml.g5.2xlarge Studio apps (USE1)"
    assert sagemaker_usage("USE1-RealTimeInference-Storage") == "USE1-RealTimeInference-Storage"


# ------------------------------------------------------------------ clicks


def interaction(value: str, button: str = "costguard.keep_tomorrow") -> str:
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0].update(action_id=button, value=value)
    return urlencode({"payload": json.dumps(payload)})


def test_a_click_on_a_sagemaker_button_names_the_resource_and_survives_the_queue() -> None:
    [keep, *_] = sagemaker_keep_buttons(
        "app", "d-abc123def456/space.team/JupyterLab/default", "eu-west-1", "111122223333"
    )
    click = parse_interaction(interaction(keep["value"], keep["action_id"]))
    assert click is not None
    assert (click.kind, click.instance_id, click.region, click.account) == (
        "app", "d-abc123def456/space.team/JupyterLab/default", "eu-west-1", "111122223333"
    )  # fmt: skip
    assert click.button is Button.KEEP_2H
    assert Click.from_json(click.to_json()) == click


def test_an_ec2_click_reads_as_before_and_a_forged_sagemaker_name_is_refused() -> None:
    ec2 = parse_interaction(interaction(json.dumps({"i": "i-0123456789abcdef0", "r": "us-east-1"})))
    assert ec2 is not None
    assert (ec2.kind, ec2.instance_id, ec2.sagemaker) == ("instance", "i-0123456789abcdef0", False)
    for forged in (
        {"k": "notebook", "n": "x/../../etc", "r": "us-east-1"},
        {"k": "cluster", "n": "a", "r": "us-east-1"},
    ):
        with pytest.raises(EventValidationError):
            parse_interaction(interaction(json.dumps(forged)))


def test_a_hostile_owner_tag_reaches_slack_escaped_in_every_sagemaker_message() -> None:
    hostile = "<!channel> <https://example.com|re-authenticate>"
    resource = endpoint_resource(tags={"Owner": hostile})
    decision = decide(resource, idle(resource), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    week = SageMakerWeek(endpoints=1, zombies=[Zombie("churn-v2", hostile, 36.0, hostile)], idle_shutdown_off=[hostile])
    for message in (
        warning(resource, decision, Price(1.5, "pricing-api"), hostile, NOW),
        act_notice(resource, decision, Price(1.5, "pricing-api"), hostile),
        unattributed([("endpoint/churn-v2", "us-east-1", hostile)], "Owner"),
    ):
        assert "<!channel>" not in json.dumps(message.blocks) + message.text
    assert "<!channel>" not in json.dumps(digest_section(week))
    assert "&lt;!channel&gt;" in json.dumps(digest_section(week))


def test_an_exempt_resource_keeps_its_old_warning_tags_since_costguard_may_not_tag_it() -> None:
    # IAM lets costguard write no tag on a costguard:exempt resource (TagIdleStateOnly); clearing the warning
    # was refused every sweep, and each refusal failed the run (a retry, then the dead-letter queue).
    warned = {tags.IDLE_WARNED_AT: "2026-11-24T10:00:00Z", tags.STOP_AFTER: "2026-11-25T10:00:00Z"}
    exempt = endpoint_resource(tags={**warned, tags.EXEMPT: "demo day"})
    decision = decide(exempt, idle(exempt), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    assert (decision.action, decision.reason) == (Action.SKIP, "exempt: demo day")
    kept = endpoint_resource(tags={**warned, tags.KEEP_UNTIL: "2026-12-01T00:00:00Z"})
    assert decide(kept, idle(kept), SageMakerPolicy(), NOW).action is Action.CLEAR_WARNING  # type: ignore[arg-type]


def notebook_resource(**kwargs: object) -> Resource:
    base: dict[str, Any] = {
        "kind": Kind.NOTEBOOK,
        "name": "alice-research",
        "region": "us-east-1",
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:notebook-instance/alice-research",
        "instance_type": "ml.g5.xlarge",
        "status": "InService",
        "since": NOW - timedelta(days=5),
        "tags": {"Owner": "alice@example.com"},
    }
    return Resource(**{**base, **kwargs})


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


class FakeApi:
    """What WeekCollector reads of SageMaker, as records (no I/O)."""

    def __init__(self, notebooks: list[Resource], endpoints: list[Resource], apps: list[Resource]) -> None:
        self._notebooks, self._endpoints, self._apps = notebooks, endpoints, apps

    def notebooks(self, wanted: Any) -> list[Resource]:
        return [r for r in self._notebooks if wanted(r.instance_type)]

    def endpoints(self, wanted: Any) -> list[Resource]:
        return [r for r in self._endpoints if any(wanted(v.instance_type) for v in r.variants)]

    def apps(self, wanted: Any) -> list[Resource]:
        return [r for r in self._apps if wanted(r.instance_type)]

    def idle_settings(self) -> list[IdleSetting]:
        return []


class FakeMetrics:
    def __init__(self, notebooks: dict[str, Any], endpoints: dict[str, Any]) -> None:
        self.notebooks, self.endpoints = notebooks, endpoints

    def watched_notebooks(self) -> set[str]:
        return set(self.notebooks)

    def notebook_series(self, names: Any, start: datetime, end: datetime, period: int = 300) -> Any:
        return {n: self.notebooks[n] for n in names}, {}

    def endpoint_series(self, endpoints: Any, start: datetime, window_start: datetime, end: datetime) -> Any:
        return self.endpoints, {}


def test_the_digest_week_counts_only_what_it_saw_idle_and_names_only_judged_zombies() -> None:
    hours = [(NOW - timedelta(hours=h), 0.0) for h in range(1, 11)]
    cores = [(NOW - timedelta(hours=h), 80.0 if h == 3 else 2.0) for h in range(1, 11)]
    zombie = endpoint_resource()
    asynchronous = endpoint_resource(name="batchy", asynchronous=True)
    cpu_only = {Signal.CPU: daily(8, 2.0)}
    checked = NOW - timedelta(minutes=3)
    unseen_app = studio_app(last_health_check=checked, last_user_activity=checked)
    region = SageMakerRegion(
        "us-east-1",
        FakeApi([notebook_resource()], [zombie, asynchronous], [unseen_app]),  # type: ignore[arg-type]
        FakeMetrics(  # type: ignore[arg-type]
            {"alice-research": {Signal.KERNEL_ACTIVITY: hours, Signal.GPU: hours, Signal.BUSIEST_CORE: cores}},
            {"churn-v2/AllTraffic": cpu_only, "batchy/AllTraffic": cpu_only},
        ),
    )
    prices = PriceBook(None)
    week = WeekCollector(prices, SageMakerPolicy(), "Owner").collect([region], [], NOW - timedelta(days=7), NOW)
    assert (week.notebooks, week.endpoints, week.apps) == (1, 2, 1)
    assert [z.name for z in week.zombies] == ["churn-v2"], "an asynchronous endpoint publishes no Invocations"
    assert week.idle_hours == 9, "the notebook's quiet reported hours (one had a busy core); the unseen app's none"
    assert week.zombie_days == 7


# ------------------------------------------------------------------ hostile input, generated


@given(value=hostile)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_every_sagemaker_message_escapes_what_it_did_not_write(value: str) -> None:
    # Owner tags, AWS's error messages, Studio names and CloudTrail reasons reach Slack only escaped.
    resource = endpoint_resource(tags={"Owner": value}, instance_type=value, region=value)
    activity = Activity(Verdict.IDLE, value, NOW - timedelta(days=7), last_invoked=NOW - timedelta(days=9))
    decision = Decision(resource.key, Action.WARN, value, NOW + timedelta(hours=24), activity=activity, why_not=value)
    unseen = Decision(
        "app/x", Action.WARN, value, will_act=False, why_not=value, activity=Activity(Verdict.UNSEEN, value)
    )
    app = studio_app(tags={"Owner": value})
    week = SageMakerWeek(
        notebooks=1,
        zombies=[Zombie(value, value, 3.0, value)],
        unwatched=[value],
        idle_shutdown_off=[value],
        errors=[value],
    )
    for message in (
        warning(resource, decision, Price(1.5, "pricing-api"), value, NOW),
        warning(app, unseen, Price(None, "unknown"), value, NOW),
        act_notice(resource, decision, Price(1.5, "bundled"), value),
        dry_run_notice(resource, decision, Price(1.5, "pricing-api"), value),
        act_failed_notice(resource, value, value),
        idle_settings_report([IdleSetting("space", "d-1", value, "JupyterLab", False, None)], 120),
        unattributed([(value, value, value)], "Owner"),
    ):
        assert_harmless(message, value)
    assert_harmless({"blocks": digest_section(week)}, value)


@given(value=st.text(max_size=400))
def test_a_tag_value_costguard_writes_is_always_one_sagemaker_accepts(value: str) -> None:
    # Tag.Value: "Length Constraints: Maximum length of 256. Pattern: ([\p{L}\p{Z}\p{N}_.:/=+\-@]*)" (API
    # reference). A tab, a newline or another control character in a Slack name or a session name is not \p{Z}.
    written = tags.sagemaker_value(value)
    assert len(written) <= 256
    assert all(unicodedata.category(c)[0] in "LZN" or c in "_.:/=+-@" for c in written), repr(written)
    assert tags.sagemaker_value("alice\tsmith\n") == "alice_smith_"
    assert tags.sagemaker_value("Zoë O'Brien <zoe@example.com>") == "Zoë O_Brien _zoe@example.com_"
