"""SageMaker end to end: moto's notebook instances, endpoints and endpoint configurations, CloudWatch metrics as
costguard's lifecycle configuration and SageMaker publish them, Slack through the stand-in, clicks through the
buttons worker; Studio (domains, user profiles, spaces, apps: moto has none of the last three) through botocore's
Stubber with the exact requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from costguard.aws.pricing import PriceBook
from costguard.aws.sagemaker import (
    INSTANCE_NAMESPACE,
    INVOCATIONS_NAMESPACE,
    NOTEBOOK_NAMESPACE,
    SageMaker,
    SageMakerMetrics,
)
from costguard.core import tags
from costguard.core.settings import Mode, SageMakerPolicy
from costguard.runtime import Runtime
from costguard.sagemaker.acts import SageMakerActs
from costguard.sagemaker.sweep import SageMakerSweep
from testing.handlers import load_event, load_handler
from testing.moto_fixes import set_sagemaker_time
from testing.slack_standin import SlackStandIn
from testing.slack_text import dates_in
from tests.integration.conftest import REGION, make_runtime
from tests.integration.test_buttons import call, http_event, queued, runtime_for

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("sagemaker_stopper")
SWEEP = load_event("sagemaker_stopper/sweep.json")
ROLE = "arn:aws:iam::123456789012:role/sagemaker-execution"


def sagemaker() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def tags_on(arn: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in sagemaker().list_tags(ResourceArn=arn)["Tags"]}


def notebook(name: str, now: datetime, *, owner: str = "alice@example.com", hours: float = 6) -> str:
    arn = sagemaker().create_notebook_instance(
        NotebookInstanceName=name,
        InstanceType="ml.p3.2xlarge",  # moto's list of notebook types has no ml.g5
        RoleArn=ROLE,
        Tags=[{"Key": "Owner", "Value": owner}],
    )["NotebookInstanceArn"]
    set_sagemaker_time("notebook", name, REGION, now - timedelta(hours=hours))
    return str(arn)


def kernels(
    name: str,
    start: datetime,
    end: datetime,
    *,
    busy_at: datetime | None = None,
    gap: bool = False,
    core_busy_at: datetime | None = None,
) -> None:
    """What costguard's lifecycle configuration publishes every 5 minutes; `gap`: it missed one report;
    `core_busy_at`: a job outside any kernel kept a CPU core busy in that period."""
    data = []
    at = start
    while at < end:
        skipped = gap and abs((at - (start + (end - start) / 2)).total_seconds()) < 150
        if not skipped:
            dims = [{"Name": "NotebookInstanceName", "Value": name}]
            data.append(
                {"MetricName": "KernelActivity", "Dimensions": dims, "Timestamp": at, "Value": float(at == busy_at)}
            )
            data.append({"MetricName": "GPUUtilization", "Dimensions": dims, "Timestamp": at, "Value": 0.0})
            core = 97.0 if at == core_busy_at else 3.0
            data.append({"MetricName": "BusiestCoreUtilization", "Dimensions": dims, "Timestamp": at, "Value": core})
        at += timedelta(minutes=5)
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    for first in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace=NOTEBOOK_NAMESPACE, MetricData=cast(Any, data[first : first + 500]))


def endpoint(name: str, now: datetime, *, owner: str = "bob@example.com", days: float = 10, config: str = "") -> str:
    """A real-time endpoint on one ml.g4dn.xlarge; `config`: created from that existing configuration."""
    client = sagemaker()
    if not config:
        config = f"{name}-config"
        client.create_model(ModelName=f"{name}-model", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "image"})
        client.create_endpoint_config(
            EndpointConfigName=config,
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": f"{name}-model",
                    "InitialInstanceCount": 1,
                    "InstanceType": "ml.g4dn.xlarge",
                }
            ],
        )
    arn = client.create_endpoint(EndpointName=name, EndpointConfigName=config, Tags=[{"Key": "Owner", "Value": owner}])[
        "EndpointArn"
    ]
    set_sagemaker_time("endpoint", name, REGION, now - timedelta(days=days))
    return str(arn)


def endpoint_metrics(
    name: str, now: datetime, *, days: int = 10, missing_day: int | None = None, invoked: datetime | None = None
) -> None:
    """SageMaker's: the instances' CPU every day the variant ran; Invocations only when there were calls."""
    dims = [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": "AllTraffic"}]
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    cpu = [
        {
            "MetricName": "CPUUtilization",
            "Dimensions": dims,
            "Timestamp": midnight - timedelta(days=d) + timedelta(hours=12),
            "Value": 3.0,
        }
        for d in range(1, days + 1)
        if d != missing_day
    ]
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    cloudwatch.put_metric_data(Namespace=INSTANCE_NAMESPACE, MetricData=cast(Any, cpu))
    if invoked is not None:
        calls = [{"MetricName": "Invocations", "Dimensions": dims, "Timestamp": invoked, "Value": 1.0}]
        cloudwatch.put_metric_data(Namespace=INVOCATIONS_NAMESPACE, MetricData=cast(Any, calls))


def days_since(first: datetime, later: datetime) -> int:
    """The days whose metrics a later call must add after one at `first`: every day from `first`'s on, so that
    no day between them is missing (25 hours after 23:20 is two days on, not one)."""
    return (later.date() - first.date()).days


def sweep(
    runtime: Runtime, at: datetime, monkeypatch: pytest.MonkeyPatch, lambda_context: Any, **policy: Any
) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    result = app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=SageMakerPolicy(**policy))
    return result["regions"][REGION]  # type: ignore[no-any-return]


def press(
    slack: SlackStandIn,
    posted: Any,
    button: str,
    runtime: Runtime,
    queue: str,
    at: datetime,
    lambda_context: Any,
    monkeypatch: Any,
) -> dict[str, Any]:
    """A click on a button of a message costguard posted, through the receiver and the worker."""
    offered = [
        e for b in posted.blocks for e in [*b.get("elements", []), *([b["accessory"]] if "accessory" in b else [])]
    ]
    [element] = [e for e in offered if e.get("action_id") == button]
    payload: dict[str, Any] = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0].update(action_id=button, value=element["value"])
    payload["user"].update(id="U0ALICE", username="alice")
    payload["message"]["ts"] = payload["container"]["message_ts"] = posted.ts
    payload["message"]["blocks"] = posted.blocks
    payload["response_url"] = slack.response_url(posted.ts)
    assert call(http_event(payload, at=at), runtime, lambda_context, monkeypatch, at=at) == {
        "statusCode": 200,
        "body": "",
    }
    return call({"Records": queued(queue)}, runtime, lambda_context, monkeypatch, at=at)


@pytest.fixture
def queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = boto3.client("sqs", region_name=REGION).create_queue(QueueName="costguard-clicks")["QueueUrl"]
    monkeypatch.setenv("CLICK_QUEUE_URL", url)
    monkeypatch.setenv("TEAM_TIMEZONE", "UTC")
    clicks = load_handler("buttons")
    receiver = load_handler("slack_receiver")
    clicks._settings.cache_clear()
    receiver._settings.cache_clear()
    yield str(url)
    clicks._settings.cache_clear()
    receiver._settings.cache_clear()


# ------------------------------------------------------------------ notebook instances


def test_an_idle_gpu_notebook_is_warned_then_stopped_and_started_again_from_slack(
    aws: None, slack: SlackStandIn, queue: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    arn = notebook("alice-research", now)
    kernels("alice-research", now - timedelta(hours=3), now + timedelta(minutes=40))

    first = sweep(runtime, now, monkeypatch, lambda_context)
    assert first["warned"] == ["notebook/alice-research"]
    [warning] = slack.messages
    assert warning.channel == "U0ALICE"
    assert warning.blocks[0]["text"]["text"] == "Idle SageMaker notebook instance · $92/day"  # cost first
    assert "costguard will stop it *" in json.dumps(warning.blocks)
    assert dates_in(warning.blocks[1]) == [int((now + timedelta(minutes=30)).timestamp())]
    assert "$3.83/h" in json.dumps(warning.blocks), "ml.p3.2xlarge, the bundled price: moto has no Pricing API"
    state = tags_on(arn)
    assert state[tags.STOP_AFTER] == f"{now + timedelta(minutes=30):%Y-%m-%dT%H:%M:%SZ}"

    during_grace = sweep(runtime, now + timedelta(minutes=15), monkeypatch, lambda_context)
    assert during_grace["actions"] == {"wait": 1}
    after = sweep(runtime, now + timedelta(minutes=35), monkeypatch, lambda_context)
    assert after["acted"] == ["notebook/alice-research"]
    assert (
        sagemaker().describe_notebook_instance(NotebookInstanceName="alice-research")["NotebookInstanceStatus"]
        == "Stopped"
    )
    warning, notice = slack.messages  # the warning, changed in place; the stop told as a reply under it
    assert notice.text.startswith("Stopped: SageMaker notebook instance · saves $92/day.")
    assert warning.blocks[0]["text"]["text"] == "Stopped: SageMaker notebook instance · saves $92/day"
    assert tags.STOPPED_AT in tags_on(arn)

    done = press(
        slack, warning, "costguard.start", runtime, queue, now + timedelta(minutes=40), lambda_context, monkeypatch
    )
    assert done["clicks"] == [{"instance_id": "alice-research", "button": "costguard.start", "status": "done"}]
    assert warning.blocks[0]["text"]["text"] == "Started again: SageMaker notebook instance · $92/day"
    assert "by <@U0ALICE>." in warning.blocks[1]["text"]["text"]
    assert len(slack.messages) == 2
    assert (
        sagemaker().describe_notebook_instance(NotebookInstanceName="alice-research")["NotebookInstanceStatus"]
        == "InService"
    )


def test_a_notebook_warning_says_its_stop_time_in_the_teams_zone_where_slack_cannot_show_the_readers(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    notebook("alice-research", now)
    kernels("alice-research", now - timedelta(hours=3), now + timedelta(minutes=40))

    sweep(runtime, now, monkeypatch, lambda_context, team_timezone="Asia/Tokyo")
    [warning] = slack.messages
    stop_at = (now + timedelta(minutes=30)).astimezone(ZoneInfo("Asia/Tokyo"))
    fallback = json.dumps(warning.blocks[1]).split("|", 1)[1]  # <!date^...|the text shown where dates are not>
    assert f"{stop_at:%H:%M}" in fallback
    assert "UTC" not in fallback


def test_the_sagemaker_stopper_reads_the_teams_zone() -> None:
    assert SageMakerPolicy.from_env({"TEAM_TIMEZONE": "Europe/Berlin"}).team_timezone == "Europe/Berlin"
    assert SageMakerPolicy.from_env({}).team_timezone == "UTC"


def test_a_notebook_whose_kernel_worked_is_left_alone(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    arn = notebook("busy-nb", now)
    kernels("busy-nb", now - timedelta(hours=3), now, busy_at=now - timedelta(minutes=45))
    result = sweep(runtime, now, monkeypatch, lambda_context)
    assert result["warned"] == []
    assert slack.messages == []
    assert tags.IDLE_WARNED_AT not in tags_on(arn)


def test_a_notebook_whose_cpu_worked_outside_any_kernel_is_left_alone(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    arn = notebook("preprocessing-nb", now)
    start = now - timedelta(hours=3)
    kernels("preprocessing-nb", start, now, core_busy_at=start + timedelta(minutes=5 * 24))  # 1 h ago
    result = sweep(runtime, now, monkeypatch, lambda_context)
    assert result["warned"] == []
    assert slack.messages == []
    assert tags.IDLE_WARNED_AT not in tags_on(arn)


def test_a_notebook_with_a_missing_report_or_none_at_all_is_never_warned(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    notebook("gap-nb", now)
    kernels("gap-nb", now - timedelta(hours=3), now, gap=True)
    notebook("unwatched-nb", now)  # no lifecycle configuration: it reports nothing
    result = sweep(runtime, now, monkeypatch, lambda_context)
    assert result["warned"] == []
    assert result["unwatched_notebooks"] == ["unwatched-nb"]
    assert result["decisions"] == [], "a gap is missing data, never idleness: nothing to warn or say"
    assert slack.messages == []


# ------------------------------------------------------------------ endpoints


def test_a_zombie_endpoint_is_warned_with_its_cost_deleted_and_recreated_from_its_button(
    aws: None, slack: SlackStandIn, queue: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    monkeypatch.setenv("SLACK_ADMINS", "U0ALICE")  # bob's endpoint; alice is an admin here
    load_handler("buttons")._settings.cache_clear()
    arn = endpoint("churn-v2", now)
    endpoint_metrics("churn-v2", now, invoked=now - timedelta(days=9, hours=3))
    deleting = {"endpoints_delete": True}

    first = sweep(runtime, now, monkeypatch, lambda_context, **deleting)
    assert first["warned"] == ["endpoint/churn-v2"]
    [warning] = slack.messages
    body = json.dumps(warning.blocks)
    assert "$0.74/h" in body, "ml.g4dn.xlarge"
    assert "$18/day" in body
    assert "Cost since its last invocation" in body
    assert tags_on(arn)[tags.STOP_AFTER] == f"{now + timedelta(hours=24):%Y-%m-%dT%H:%M:%SZ}"

    later = now + timedelta(hours=25)
    endpoint_metrics("churn-v2", later, days=days_since(now, later))
    after = sweep(runtime, later, monkeypatch, lambda_context, **deleting)
    assert after["acted"] == ["endpoint/churn-v2"]
    assert sagemaker().list_endpoints()["Endpoints"] == []
    config = sagemaker().describe_endpoint_config(EndpointConfigName="churn-v2-config")
    assert tags_on(config["EndpointConfigArn"])[f"{tags.DELETED_ENDPOINT}:churn-v2"] == "bob@example.com", (
        "kept, and says which endpoint costguard deleted from it, and whose it was"
    )
    assert warning.blocks[0]["text"]["text"] == "Deleted: SageMaker endpoint · saves $18/day"

    done = press(
        slack, warning, "costguard.recreate", runtime, queue, later + timedelta(minutes=5), lambda_context, monkeypatch
    )
    assert done["clicks"][0]["status"] == "done"
    assert warning.blocks[0]["text"]["text"] == "Recreated: SageMaker endpoint · $18/day"
    assert "from `churn-v2-config`: in service in a few minutes." in warning.blocks[1]["text"]["text"]
    [again] = sagemaker().list_endpoints()["Endpoints"]
    assert again["EndpointName"] == "churn-v2"
    restored = tags_on(again["EndpointArn"])
    assert restored["Owner"] == "bob@example.com"
    assert restored[tags.RECREATED_BY] == "alice"


def test_two_zombie_endpoints_of_one_configuration_are_both_recreated_from_their_buttons(
    aws: None, slack: SlackStandIn, queue: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A demo and its copy from one endpoint configuration: the configuration kept the name of the last one
    # deleted only, and the other's Recreate answered "costguard did not delete it".
    runtime = runtime_for(slack)
    monkeypatch.setenv("SLACK_ADMINS", "U0ALICE")
    load_handler("buttons")._settings.cache_clear()
    endpoint("demo-a", now)
    endpoint("demo-b", now, owner="carol@example.com", config="demo-a-config")
    for name in ("demo-a", "demo-b"):
        endpoint_metrics(name, now)
    sweep(runtime, now, monkeypatch, lambda_context, endpoints_delete=True)
    later = now + timedelta(hours=25)
    for name in ("demo-a", "demo-b"):
        endpoint_metrics(name, later, days=days_since(now, later))
    after = sweep(runtime, later, monkeypatch, lambda_context, endpoints_delete=True)
    assert sorted(after["acted"]) == ["endpoint/demo-a", "endpoint/demo-b"]
    offering = [m for m in slack.messages if "costguard.recreate" in json.dumps(m.blocks)]
    warnings = {name: m for m in offering for name in ("demo-a", "demo-b") if f"endpoint {name} " in m.text}
    for name, owner in (("demo-a", "bob@example.com"), ("demo-b", "carol@example.com")):
        notice = warnings[name]  # each warning, changed in place, offers its endpoint's Recreate
        at = later + timedelta(minutes=5)
        done = press(slack, notice, "costguard.recreate", runtime, queue, at, lambda_context, monkeypatch)
        assert done["clicks"][0]["status"] == "done", name
        [again] = [e for e in sagemaker().list_endpoints()["Endpoints"] if e["EndpointName"] == name]
        assert tags_on(again["EndpointArn"])["Owner"] == owner


def test_a_recreate_aws_refuses_is_answered_not_retried_for_ever(
    aws: None, slack: SlackStandIn, queue: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model was deleted since: CreateEndpoint's ValidationException will not pass on a retry. It went back
    # to the queue on every delivery, then to the dead-letter queue, and the person who clicked heard nothing.
    runtime = runtime_for(slack)
    monkeypatch.setenv("SLACK_ADMINS", "U0ALICE")
    load_handler("buttons")._settings.cache_clear()
    endpoint("churn-v3", now)
    endpoint_metrics("churn-v3", now)
    sweep(runtime, now, monkeypatch, lambda_context, endpoints_delete=True)
    later = now + timedelta(hours=25)
    endpoint_metrics("churn-v3", later, days=days_since(now, later))
    sweep(runtime, later, monkeypatch, lambda_context, endpoints_delete=True)
    notice = slack.messages[0]  # the warning, which now offers Recreate

    def model_gone(*_: Any, **__: Any) -> bool:
        error = {"Error": {"Code": "ValidationException", "Message": "Could not find model churn-v3-model."}}
        raise ClientError(error, "CreateEndpoint")  # type: ignore[arg-type]

    monkeypatch.setattr(SageMaker, "create_endpoint", model_gone)
    at = later + timedelta(minutes=5)
    done = press(slack, notice, "costguard.recreate", runtime, queue, at, lambda_context, monkeypatch)
    assert done["clicks"][0]["status"] == "refused"
    answer = json.dumps(slack.ephemeral[-1])
    assert "ValidationException" in answer
    assert "Could not find model" in answer


def test_without_deletion_a_zombie_endpoint_is_warned_once_and_kept(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    arn = endpoint("demo-endpoint", now)
    endpoint_metrics("demo-endpoint", now)
    sweep(runtime, now, monkeypatch, lambda_context)
    again = sweep(runtime, now + timedelta(days=2), monkeypatch, lambda_context)
    assert len(slack.messages) == 1
    assert "costguard will not delete it: endpoint deletion is off (EndpointsDelete)." in json.dumps(
        slack.messages[0].blocks
    )
    assert tags.STOP_AFTER not in tags_on(arn)
    assert again["acted"] == []
    assert len(sagemaker().list_endpoints()["Endpoints"]) == 1


def test_an_endpoint_invoked_once_in_the_window_is_left_alone(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    endpoint("rarely-called", now)
    endpoint_metrics("rarely-called", now, invoked=now - timedelta(days=3))
    result = sweep(runtime, now, monkeypatch, lambda_context, endpoints_delete=True)
    assert result["warned"] == []
    assert slack.messages == []


def test_an_endpoint_with_a_day_of_missing_metrics_is_left_alone(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack)
    endpoint("quiet-metrics", now)
    endpoint_metrics("quiet-metrics", now, missing_day=4)  # no invocation, but no proof the metrics flowed that day
    result = sweep(runtime, now, monkeypatch, lambda_context, endpoints_delete=True)
    assert result["warned"] == []
    assert slack.messages == []


# -------------------------------------------------------------- Studio: Stubber (moto has no apps, profiles, spaces)


def test_studio_settings_without_idle_shutdown_are_reported_and_a_gpu_app_sagemaker_cannot_see_is_never_deleted(
    aws: None, slack: SlackStandIn, now: datetime
) -> None:
    runtime = make_runtime(slack, mode=Mode.ENFORCE)
    client = boto3.client("sagemaker", region_name=REGION)
    created = now - timedelta(hours=20)
    app_arn = f"arn:aws:sagemaker:{REGION}:123456789012:app/d-abc123def456/bob/jupyterlab/default"
    app_params = {"DomainId": "d-abc123def456", "UserProfileName": "bob", "AppType": "JupyterLab", "AppName": "default"}
    off = {"AppLifecycleManagement": {"IdleSettings": {"LifecycleManagement": "DISABLED"}}}
    long = {"AppLifecycleManagement": {"IdleSettings": {"LifecycleManagement": "ENABLED", "IdleTimeoutInMinutes": 480}}}
    with Stubber(client) as stub:
        stub.add_response("list_notebook_instances", {"NotebookInstances": []}, {"StatusEquals": "InService"})
        stub.add_response("list_endpoints", {"Endpoints": []}, {"StatusEquals": "InService"})
        stub.add_response(
            "list_apps",
            {
                "Apps": [
                    {
                        **app_params,
                        "Status": "InService",
                        "CreationTime": created,
                        "ResourceSpec": {"InstanceType": "ml.g5.2xlarge"},
                    }
                ]
            },
            {},
        )
        stub.add_response(
            "describe_app",
            {
                **app_params,
                "AppArn": app_arn,
                "Status": "InService",
                "CreationTime": created,
                "LastHealthCheckTimestamp": now - timedelta(minutes=2),
                "LastUserActivityTimestamp": now - timedelta(minutes=2),  # the health check's: no user seen
                "ResourceSpec": {"InstanceType": "ml.g5.2xlarge"},
            },
            app_params,
        )
        stub.add_response(
            "list_tags", {"Tags": [{"Key": "Owner", "Value": "bob@example.com"}]}, {"ResourceArn": app_arn}
        )
        stub.add_response(
            "add_tags",
            {"Tags": []},
            {"ResourceArn": app_arn, "Tags": [{"Key": tags.IDLE_WARNED_AT, "Value": f"{now:%Y-%m-%dT%H:%M:%SZ}"}]},
        )
        stub.add_response("list_domains", {"Domains": [{"DomainId": "d-abc123def456", "DomainName": "research"}]}, {})
        stub.add_response(
            "describe_domain",
            {
                "DomainId": "d-abc123def456",
                "DomainName": "research",
                "DefaultUserSettings": {"JupyterLabAppSettings": off},
            },
            {"DomainId": "d-abc123def456"},
        )
        stub.add_response(
            "list_user_profiles",
            {"UserProfiles": [{"DomainId": "d-abc123def456", "UserProfileName": "bob"}]},
            {"DomainIdEquals": "d-abc123def456"},
        )
        stub.add_response(
            "describe_user_profile",
            {"DomainId": "d-abc123def456", "UserProfileName": "bob", "UserSettings": {"CodeEditorAppSettings": long}},
            {"DomainId": "d-abc123def456", "UserProfileName": "bob"},
        )
        stub.add_response("list_spaces", {"Spaces": []}, {"DomainIdEquals": "d-abc123def456"})
        api = SageMaker(client, REGION, Mode.ENFORCE, owner_tag_key="Owner")
        # Deletion on: the app is still only warned (the add_tags above carries no costguard:stop-after).
        policy = SageMakerPolicy(studio_apps_delete=True)
        acts = SageMakerActs(
            api=api, prices=runtime.prices, ledger=runtime.ledger, claims=runtime.claims,
            notifier=lambda: runtime.notifier, settings=runtime.settings, policy=policy,
        )  # fmt: skip
        metrics = SageMakerMetrics(boto3.client("cloudwatch", region_name=REGION))
        report = SageMakerSweep(
            region=REGION, api=api, metrics=metrics, acts=acts, policy=policy, mode=Mode.ENFORCE
        ).run(now)
        stub.assert_no_pending_responses()
    summary = report.summary()
    assert summary["warned"] == ["app/d-abc123def456/user.bob/JupyterLab/default"]
    # The domain's JupyterLab (off), its Code Editor and its spaces' JupyterLab (not set: Studio's default is
    # off), and bob's Code Editor (8 h, longer than the team's 2-h window).
    assert summary["idle_settings_reported"] == 4
    warning, settings = slack.messages
    assert "costguard will not delete it: SageMaker does not report whether anyone works in it" in json.dumps(
        warning.blocks
    )
    assert settings.channel == "C0ALERTS"
    body = json.dumps(settings.blocks)
    assert "domain `research` (domain d-abc123def456), JupyterLab: idle shutdown off" in body
    assert "user profile `bob` (domain d-abc123def456), CodeEditor: shuts down after 480 min idle" in body


# ------------------------------------------------------------------ owners and prices


def test_a_notebook_instance_created_through_the_console_is_tagged_with_its_creator(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any
) -> None:
    runtime = make_runtime(slack)
    arn = notebook("alice-research", now, owner="")
    sagemaker().delete_tags(ResourceArn=arn, TagKeys=["Owner"])
    tagger = load_handler("owner_tagger")
    tagger._settings.cache_clear()
    result = tagger.lambda_handler(
        load_event("owner_tagger/sagemaker-createnotebookinstance.json"), lambda_context, runtime=runtime
    )
    assert result["sagemaker_tagged"] == ["notebook/alice-research"]
    written = tags_on(arn)
    assert written["Owner"] == "alice@example.com"
    assert written[tags.OWNER_SOURCE] == "identity-center"
    assert written[tags.CREATED_BY].endswith(
        "assumed-role/AWSReservedSSO_DataScientist_0123456789abcdef/alice@example.com"
    )


def test_the_backfill_corrects_an_owner_sagemaker_that_costguard_wrote_from_a_notebooks_session(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any
) -> None:
    runtime = make_runtime(slack)
    wrong = notebook("nlp-sandbox", now, owner="SageMaker")
    session = "arn:aws:sts::123456789012:assumed-role/nlp-notebooks/SageMaker"
    sagemaker().add_tags(
        ResourceArn=wrong,
        Tags=[{"Key": tags.OWNER_SOURCE, "Value": "assumed-role"}, {"Key": tags.CREATED_BY, "Value": session}],
    )
    by_hand = notebook("sagemaker-team", now, owner="SageMaker")  # someone's own tag: theirs, never touched
    tagger = load_handler("owner_tagger")
    tagger._settings.cache_clear()
    with Stubber(runtime.client("cloudtrail", REGION)) as stub:  # no look-up: the create call's ARN is on it
        result = tagger.lambda_handler(load_event("owner_tagger/backfill.json"), lambda_context, runtime=runtime)
        stub.assert_no_pending_responses()
    assert "notebook/nlp-sandbox" in json.dumps(result)
    assert tags_on(wrong)["Owner"] == "nlp-notebooks"
    assert tags_on(wrong)[tags.OWNER_SOURCE] == "execution-role"
    assert tags_on(wrong)[tags.CREATED_BY] == session
    assert tags_on(by_hand) == {"Owner": "SageMaker"}


def product(usage: str, usd: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"usagetype": usage, "instanceName": "ml.g5.xlarge", "regionCode": "eu-west-1"}},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}},
        }
    )


def test_sagemaker_prices_come_from_the_pricing_api_by_usage_type_in_one_call() -> None:
    client = boto3.client("pricing", region_name="us-east-1")
    expected = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.g5.xlarge"},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "eu-west-1"},
        ],
        "MaxResults": 100,
    }
    answer = {
        "PriceList": [product("EUW1-Host:ml.g5.xlarge", "1.57"), product("EUW1-Notebk:ml.g5.xlarge", "1.58")],
        "FormatVersion": "aws_v1",
    }
    with Stubber(client) as stub:
        stub.add_response("get_products", answer, expected)
        book = PriceBook(client)
        host = book.sagemaker_hourly("ml.g5.xlarge", "eu-west-1", "endpoint")
        notebook_price = book.sagemaker_hourly("ml.g5.xlarge", "eu-west-1", "notebook")
        studio = book.sagemaker_hourly("ml.g5.xlarge", "eu-west-1", "app")
        stub.assert_no_pending_responses()
    assert (host.usd_per_hour, host.source) == (1.57, "pricing-api")
    assert (notebook_price.usd_per_hour, notebook_price.source) == (1.58, "pricing-api")
    assert (studio.usd_per_hour, studio.source) == (1.58, "bundled"), (
        "no Studio usage type here: the notebook's, approximate"
    )
    assert book.api_calls == 1


def test_an_endpoint_of_inference_components_is_read_as_such_and_left_unjudged(now: datetime) -> None:
    # CreateInferenceComponent puts the model in the component: the endpoint configuration's variant names none.
    client = boto3.client("sagemaker", region_name=REGION)
    arn = f"arn:aws:sagemaker:{REGION}:123456789012:endpoint/llm-shared"
    with Stubber(client) as stub:
        stub.add_response(
            "describe_endpoint",
            {
                "EndpointName": "llm-shared",
                "EndpointArn": arn,
                "EndpointConfigName": "llm-shared-config",
                "EndpointStatus": "InService",
                "CreationTime": now - timedelta(days=30),
                "LastModifiedTime": now - timedelta(days=30),
                "ProductionVariants": [{"VariantName": "AllTraffic", "CurrentInstanceCount": 2}],
            },
            {"EndpointName": "llm-shared"},
        )
        stub.add_response(
            "describe_endpoint_config",
            {
                "EndpointConfigName": "llm-shared-config",
                "EndpointConfigArn": f"arn:aws:sagemaker:{REGION}:123456789012:endpoint-config/llm-shared-config",
                "CreationTime": now - timedelta(days=30),
                "ProductionVariants": [
                    {"VariantName": "AllTraffic", "InstanceType": "ml.g5.12xlarge", "InitialInstanceCount": 2}
                ],
            },
            {"EndpointConfigName": "llm-shared-config"},
        )
        stub.add_response("list_tags", {"Tags": []}, {"ResourceArn": arn})
        found = SageMaker(client, REGION, Mode.ENFORCE).endpoint("llm-shared")
        stub.assert_no_pending_responses()
    assert found is not None
    [variant] = found.variants
    assert (variant.instance_type, variant.instance_count, variant.inference_components) == ("ml.g5.12xlarge", 2, True)
