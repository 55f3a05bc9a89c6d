"""`make uninstall`: after the demo's whole story, nothing of costguard's is left in either of its accounts but what
the uninstall says it keeps; and, against moto and botocore's Stubber, each kind of leftover the demo's account has
none of (a stack, its lifecycle configuration and the notebooks using it, log groups, a trail bucket)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.sagemaker.responses import SageMakerResponse

from costguard.core import tags
from costguard.digest.weekly.dashboards import update_dashboards
from costguard.digest.weekly.rules.figures import InstanceWeek
from scripts.uninstall import leftovers
from scripts.uninstall.__main__ import Clients, main
from scripts.uninstall.deployment import Deployment, read_deployment, samconfig_defaults
from scripts.uninstall.leftovers import is_costguard_dashboard
from scripts.uninstall.retained import data, log_groups, notebook_config, notebook_users

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"


# ------------------------------------------------------------------ after the demo


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo, then `make uninstall` three times against each of its accounts (tests/integration/
    demo_then_uninstall.py), in a process of its own."""
    directory = tmp_path_factory.mktemp("uninstall")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'costguard'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.demo_then_uninstall", str(directory)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    found: dict[str, Any] = json.loads((directory / "report.json").read_text())
    assert found["demo"] == 0, "the demo told its story to the end"
    return found


def everything(state: dict[str, Any]) -> list[str]:
    """What costguard made in an account, one line a thing, comparable between two looks."""
    out = []
    for region, found in state["regions"].items():
        out += [f"{region} alarm {a}" for a in found["alarms"]]
        out += [f"{region} dashboard {d}" for d in found["dashboards"]]
        out += [f"{region} ec2 {r} {k}" for r, k in found["ec2_tags"]]
        out += [f"{region} sagemaker {r} {k}" for r, k in found["sagemaker_tags"]]
        out += [f"{region} protected {i}" for i in found["protected"]]
    return sorted(out + (["table"] if state["table"] else []))


def kept_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("kept ")]


@pytest.mark.slow
def test_the_demo_leaves_alarms_dashboards_tags_and_protection_behind_for_the_uninstall(report: dict[str, Any]) -> None:
    hub = report["accounts"]["hub"]["before"]["regions"]
    member = report["accounts"]["member"]["before"]["regions"]["eu-west-1"]
    assert hub["us-east-1"]["alarms"]
    assert hub["us-east-1"]["dashboards"]
    assert hub["us-west-2"]["dashboards"]
    assert hub["us-east-1"]["protected"], "the demo's Auto Scaling member costguard protected"
    assert hub["us-east-1"]["sagemaker_tags"]
    assert {k for _, k in hub["us-east-1"]["ec2_tags"]} >= {tags.STOPPED_AT, tags.OWNER_SOURCE, tags.SCHEDULE}
    assert member["alarms"]
    assert member["ec2_tags"]


@pytest.mark.slow
@pytest.mark.parametrize("side", ["hub", "member"])
def test_a_dry_run_changes_nothing_and_names_what_it_would_remove(report: dict[str, Any], side: str) -> None:
    account = report["accounts"][side]
    run = account["runs"]["dry-run"]
    assert run["rc"] == 0
    assert everything(run["left"]) == everything(account["before"])
    for found in account["before"]["regions"].values():
        for alarm in found["alarms"]:
            assert alarm in run["output"]
        for resource, key in found["ec2_tags"]:
            assert any(key in line and resource in line for line in run["output"].splitlines()), (resource, key)
    assert "Dry run: nothing was changed." in run["output"]


@pytest.mark.slow
@pytest.mark.parametrize("side", ["hub", "member"])
def test_uninstall_leaves_nothing_of_costguard_but_what_it_says_it_keeps(report: dict[str, Any], side: str) -> None:
    account = report["accounts"][side]
    run = account["runs"]["keep-data"]
    assert run["rc"] == 0, run["output"]
    kept = kept_lines(run["output"])
    for region, found in run["left"]["regions"].items():
        assert (found["alarms"], found["dashboards"], found["protected"]) == ([], [], []), region
        for resource, key in found["ec2_tags"] + found["sagemaker_tags"]:
            assert key in tags.SET_BY_PEOPLE, f"{resource} {key}: costguard's own state, left behind"
            assert any(key in line and resource.split("/")[-1] in line for line in kept), f"{resource} {key} unnamed"
    assert run["left"]["table"]
    assert any("the state table costguard-state" in line for line in kept)
    assert any("the Slack secret costguard/slack" in line for line in kept)


@pytest.mark.slow
@pytest.mark.parametrize("side", ["hub", "member"])
def test_delete_data_also_removes_the_state_table_and_the_tags_people_set(report: dict[str, Any], side: str) -> None:
    run = report["accounts"][side]["runs"]["delete-data"]
    assert run["rc"] == 0, run["output"]
    assert everything(run["left"]) == []
    assert any("Owner tags" in line for line in kept_lines(run["output"]))


# ------------------------------------------------------------------ what the demo's account has none of


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    # moto has no Studio and answers ListApps with NotImplementedError; AWS lists no apps (the demo's gap proxy too).
    monkeypatch.setattr(SageMakerResponse, "list_apps", lambda _self: json.dumps({"Apps": []}), raising=False)
    with mock_aws():
        yield


STACK = """
Parameters:
  GovernedRegions: {Type: String, Default: ""}
  SlackSecretName: {Type: String, Default: costguard/slack}
Resources:
  StateTable:
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Retain
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
  DeadLetterQueue:
    Type: AWS::SQS::Queue
"""


def test_with_the_stack_there_it_is_read_first_then_deleted_and_its_retained_table_kept(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(
        StackName="costguard",
        TemplateBody=STACK,
        Parameters=[
            {"ParameterKey": "GovernedRegions", "ParameterValue": "us-east-1,eu-west-1"},
            {"ParameterKey": "SlackSecretName", "ParameterValue": "ml/slack"},
        ],
    )
    deployment = read_deployment(
        cloudformation,
        boto3.client("resourcegroupstaggingapi", region_name=REGION),
        stack_name="costguard",
        region=REGION,
    )
    table = deployment.state_table
    assert deployment.exists
    assert table, "the retained table, named by the stack"
    assert deployment.regions == ("us-east-1", "eu-west-1")
    assert deployment.slack_secret == "ml/slack"

    assert main(["--region", REGION, "--yes"]) == 0

    assert cloudformation.list_stacks(StackStatusFilter=["CREATE_COMPLETE"])["StackSummaries"] == []
    assert table in boto3.client("dynamodb", region_name=REGION).list_tables()["TableNames"], "retained, kept"
    out = capsys.readouterr().out
    assert f"removed {REGION}: the stack costguard" in out
    assert f"kept    {REGION}: the state table {table}" in out
    assert "the Slack secret ml/slack" in out


def notebook_summary(name: str, status: str, config: str) -> dict[str, str]:
    return {
        "NotebookInstanceName": name,
        "NotebookInstanceArn": f"arn:aws:sagemaker:{REGION}:123456789012:notebook-instance/{name}",
        "NotebookInstanceStatus": status,
        "NotebookInstanceLifecycleConfigName": config,
    }


def test_a_stopped_notebook_is_detached_from_the_lifecycle_configuration_and_a_running_one_stops_the_uninstall() -> (
    None
):
    client = boto3.client("sagemaker", region_name=REGION)
    deployment = Deployment("costguard", REGION, exists=True, regions=(REGION,))
    config = "costguard-notebook-activity"
    listed = {
        "NotebookInstances": [
            notebook_summary("alice-research", "Stopped", config),
            notebook_summary("bob-llm", "InService", config),
            notebook_summary("carol", "Stopped", f"{config}-old"),
        ]
    }
    with Stubber(client) as stub:
        stub.add_response(
            "list_notebook_instances",
            listed,
            {"NotebookInstanceLifecycleConfigNameContains": "costguard-notebook-activity"},
        )
        stub.add_response(
            "update_notebook_instance",
            {},
            {"NotebookInstanceName": "alice-research", "DisassociateLifecycleConfig": True},
        )
        steps, blocked = notebook_users(client, deployment)
        for step in steps:
            step.run()
        stub.assert_no_pending_responses()
    assert [s.what for s in steps] == [
        f"{REGION}: lifecycle configuration costguard-notebook-activity detached from alice-research"
    ]
    [reason] = blocked
    assert "bob-llm is InService" in reason
    assert "stop it" in reason


def test_a_running_notebook_stops_the_uninstall_before_anything_is_changed(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    client = boto3.client("sagemaker", region_name=REGION)
    client.create_notebook_instance_lifecycle_config(
        NotebookInstanceLifecycleConfigName="costguard-notebook-activity", OnStart=[{"Content": "IyEvYmluL2Jhc2g="}]
    )
    client.create_notebook_instance(
        NotebookInstanceName="bob-llm",
        InstanceType="ml.p3.2xlarge",
        RoleArn="arn:aws:iam::123456789012:role/notebooks",
        LifecycleConfigName="costguard-notebook-activity",
    )
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    cloudwatch.put_metric_alarm(
        AlarmName="costguard-idle-i-0123456789abcdef0", MetricName="CPUUtilization", Namespace="AWS/EC2",
        Statistic="Maximum", Period=300, EvaluationPeriods=1, Threshold=1, ComparisonOperator="LessThanThreshold",
    )  # fmt: skip

    assert main(["--region", REGION, "--yes"]) == 3

    assert "bob-llm is InService" in capsys.readouterr().out
    assert cloudwatch.describe_alarms()["MetricAlarms"], "nothing was changed"
    assert client.describe_notebook_instance_lifecycle_config(
        NotebookInstanceLifecycleConfigName="costguard-notebook-activity"
    )


def test_once_the_stack_is_gone_its_lifecycle_configuration_and_relogged_groups_are_removed(aws: None) -> None:
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    logs = boto3.client("logs", region_name=REGION)
    deployment = Deployment("costguard", REGION, exists=False, regions=(REGION,))
    assert notebook_config(sagemaker, deployment) == []
    sagemaker.create_notebook_instance_lifecycle_config(
        NotebookInstanceLifecycleConfigName="costguard-notebook-activity", OnStart=[{"Content": "IyEvYmluL2Jhc2g="}]
    )
    for name in (
        "/aws/lambda/costguard-IdleStopperFunction-AbC123xyz",
        "/aws/lambda/costguard-dev-IdleStopperFunction-Other1",  # another stack's: never touched
        "/aws/lambda/my-own-function",
    ):
        logs.create_log_group(logGroupName=name)

    steps = notebook_config(sagemaker, deployment) + log_groups(logs, deployment, ["IdleStopperFunction"])
    for step in steps:
        step.run()

    assert [s.what for s in steps] == [
        f"{REGION}: notebook lifecycle configuration costguard-notebook-activity",
        f"{REGION}: log group /aws/lambda/costguard-IdleStopperFunction-AbC123xyz",
    ]
    left = sorted(g["logGroupName"] for g in logs.describe_log_groups()["logGroups"])
    assert left == ["/aws/lambda/costguard-dev-IdleStopperFunction-Other1", "/aws/lambda/my-own-function"]
    assert notebook_config(sagemaker, deployment) == []


def test_the_trail_bucket_is_kept_by_default_and_emptied_then_deleted_when_asked(aws: None) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    s3.create_bucket(Bucket="costguard-trailbucket-1x2y3z")
    for n in range(3):
        s3.put_object(
            Bucket="costguard-trailbucket-1x2y3z", Key=f"AWSLogs/123456789012/CloudTrail/{n}.json.gz", Body=b"{}"
        )
    deployment = Deployment(
        "costguard", REGION, exists=False, regions=(REGION,), trail_bucket="costguard-trailbucket-1x2y3z"
    )

    steps, kept = data(dynamodb, s3, deployment, delete=False)
    assert steps == []
    assert f"{REGION}: the trail bucket costguard-trailbucket-1x2y3z" in [k.what for k in kept]

    steps, kept = data(dynamodb, s3, deployment, delete=True)
    for step in steps:
        step.run()
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == []
    assert "trail bucket" not in " ".join(k.what for k in kept)


def test_without_the_stack_the_retained_table_and_bucket_are_found_by_cloudformations_tags() -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    tagging = boto3.client("resourcegroupstaggingapi", region_name=REGION)
    gone = {"Error": {"Code": "ValidationError", "Message": "Stack with id costguard does not exist"}}
    mappings = [
        {
            "ResourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/costguard-StateTable-1ABC",
            "Tags": [{"Key": "aws:cloudformation:logical-id", "Value": "StateTable"}],
        },
        {
            "ResourceARN": "arn:aws:s3:::costguard-trailbucket-9xyz",
            "Tags": [{"Key": "aws:cloudformation:logical-id", "Value": "TrailBucket"}],
        },
    ]
    with Stubber(cloudformation) as cfn, Stubber(tagging) as tag:
        cfn.add_client_error(
            "describe_stacks", "ValidationError", gone["Error"]["Message"], 400, {"StackName": "costguard"}
        )
        tag.add_response(
            "get_resources",
            {"ResourceTagMappingList": mappings},
            {
                "TagFilters": [{"Key": "aws:cloudformation:stack-name", "Values": ["costguard"]}],
                "ResourceTypeFilters": ["dynamodb:table", "s3:bucket"],
            },
        )
        deployment = read_deployment(cloudformation, tagging, stack_name="costguard", region=REGION)
    assert not deployment.exists
    assert (deployment.state_table, deployment.trail_bucket) == (
        "costguard-StateTable-1ABC",
        "costguard-trailbucket-9xyz",
    )
    assert deployment.regions == (REGION,)


def test_the_stack_region_and_profile_come_from_the_samconfig_environment(tmp_path: Path) -> None:
    config = tmp_path / "samconfig.toml"
    config.write_text(
        'version = 0.1\n[hub.global.parameters]\nstack_name = "costguard-hub"\n'
        '[hub.deploy.parameters]\nregion = "eu-west-1"\nprofile = "hub"\n'
    )
    assert samconfig_defaults(config, "hub") == {"stack_name": "costguard-hub", "region": "eu-west-1", "profile": "hub"}
    assert samconfig_defaults(config, "member") == {}
    assert samconfig_defaults(ROOT / "samconfig.toml", "default")["stack_name"] == "costguard"


class Dashboards:
    """A CloudWatch client that keeps the dashboards it is given."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def put_dashboard(self, DashboardName: str, DashboardBody: str) -> None:
        self.names.append(DashboardName)


def test_every_dashboard_the_weekly_digest_writes_is_one_the_uninstall_knows_and_no_other() -> None:
    weeks = [
        InstanceWeek(f"i-{n:017x}", "g5.xlarge", region, "alice", team, 1, 1.0, True, "running")
        for n, (region, team) in enumerate(
            [("us-east-1", "vision"), ("us-east-1", ""), ("eu-west-1", "NLP & speech"), ("eu-west-1", "vision")]
        )
    ]
    clients = {"us-east-1": Dashboards(), "eu-west-1": Dashboards()}

    update_dashboards(clients, weeks)

    for region, client in clients.items():
        assert len(client.names) == 2
        assert all(is_costguard_dashboard(name, region) for name in client.names), client.names
    assert not is_costguard_dashboard("costguard-vision-us-east-1", "eu-west-1")
    assert not is_costguard_dashboard("gpu-fleet-us-east-1", "us-east-1")


def test_ec2_tags_are_found_in_one_filtered_walk_and_removed_a_key_at_a_time_people_s_kept() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    walk = {
        "Filters": [
            {"Name": "key", "Values": ["costguard:*"]},
            {"Name": "resource-type", "Values": ["instance", "volume"]},
        ],
        "MaxResults": 1000,
    }
    first = {
        "Tags": [
            {
                "Key": "costguard:stopped-at",
                "ResourceId": "i-0aaaaaaaaaaaaaaa1",
                "ResourceType": "instance",
                "Value": "x",
            },
            {
                "Key": "costguard:exempt",
                "ResourceId": "i-0aaaaaaaaaaaaaaa1",
                "ResourceType": "instance",
                "Value": "true",
            },
        ],
        "NextToken": "page-2",
    }
    second = {
        "Tags": [
            {
                "Key": "costguard:stopped-at",
                "ResourceId": "i-0aaaaaaaaaaaaaaa2",
                "ResourceType": "instance",
                "Value": "y",
            },
            {
                "Key": "costguard:owner-source",
                "ResourceId": "vol-0aaaaaaaaaaaaaaa3",
                "ResourceType": "volume",
                "Value": "z",
            },
        ]
    }
    with Stubber(ec2) as stub:
        stub.add_response("describe_tags", first, walk)
        stub.add_response("describe_tags", second, {**walk, "NextToken": "page-2"})
        stub.add_response(
            "delete_tags", {}, {"Resources": ["vol-0aaaaaaaaaaaaaaa3"], "Tags": [{"Key": "costguard:owner-source"}]}
        )
        stub.add_response(
            "delete_tags",
            {},
            {"Resources": ["i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2"], "Tags": [{"Key": "costguard:stopped-at"}]},
        )
        steps, kept = leftovers.ec2_tags(ec2, REGION, delete_people=False)
        for step in steps:
            step.run()
        stub.assert_no_pending_responses()
    assert [k.what for k in kept] == [f"{REGION}: EC2 tag costguard:exempt on i-0aaaaaaaaaaaaaaa1"]


def test_every_client_of_the_uninstall_retries_throttling_adaptively() -> None:
    clients = Clients(boto3.Session(region_name=REGION))
    client = clients("ec2", REGION)

    assert client.meta.config.retries["mode"] == "adaptive"
    assert client.meta.config.retries["total_max_attempts"] == 11, "10 retries after the first try"
    assert clients("ec2", REGION) is client, "one client per service and region"
