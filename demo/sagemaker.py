"""The demo's SageMaker scene: alice's GPU notebook instance, idle (as costguard's lifecycle configuration
reports it), warned and stopped; bob's challenger endpoint, not called for twelve days, warned with what it
has cost (EndpointsDelete is off: warned, kept); a Studio domain without idle shutdown, reported. Its part
of the weekly digest follows with the digest.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from costguard.aws.costexplorer import periods
from costguard.core.formatting import plural
from demo.fleet import OTHER_SERVICES
from testing.aws_gaps import AwsGaps
from testing.moto_fixes import set_sagemaker_time

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/sagemaker-execution"
NOTEBOOK = "alice-research"
ENDPOINT = "churn-v2-challenger"
SWEEP = {"costguard": "sagemaker-sweep"}


def seed(client: Callable[..., Any], gaps: AwsGaps, t0: datetime) -> None:
    """What the team runs on SageMaker, and what CloudWatch knows of it."""
    sagemaker, cloudwatch = client("sagemaker"), client("cloudwatch")
    gaps.sagemaker_prices[("ml.p3.2xlarge", REGION)] = {
        "USE1-Notebk:ml.p3.2xlarge": 3.825,
        "USE1-Host:ml.p3.2xlarge": 3.825,
    }
    gaps.sagemaker_prices[("ml.g4dn.xlarge", REGION)] = {"USE1-Host:ml.g4dn.xlarge": 0.7364}
    sagemaker.create_notebook_instance(
        NotebookInstanceName=NOTEBOOK,
        InstanceType="ml.p3.2xlarge",
        RoleArn=ROLE,
        Tags=[{"Key": "Owner", "Value": "alice@example.com"}],
    )
    set_sagemaker_time("notebook", NOTEBOOK, REGION, t0 - timedelta(hours=6))
    dims = [{"Name": "NotebookInstanceName", "Value": NOTEBOOK}]
    reports: list[Any] = []
    at = t0 - timedelta(hours=3)
    while at <= t0 + timedelta(minutes=5):
        reports += [
            {"MetricName": "KernelActivity", "Dimensions": dims, "Timestamp": at, "Value": 0.0},
            {"MetricName": "BusiestCoreUtilization", "Dimensions": dims, "Timestamp": at, "Value": 4.0},
            {"MetricName": "GPUUtilization", "Dimensions": dims, "Timestamp": at, "Value": 0.0},
        ]
        at += timedelta(minutes=5)
    cloudwatch.put_metric_data(Namespace="costguard/SageMaker", MetricData=reports)

    sagemaker.create_model(ModelName="churn-v2", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "churn:v2"})
    sagemaker.create_endpoint_config(
        EndpointConfigName="churn-v2-challenger-config",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "churn-v2",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.xlarge",
            }
        ],
    )
    sagemaker.create_endpoint(
        EndpointName=ENDPOINT,
        EndpointConfigName="churn-v2-challenger-config",
        Tags=[{"Key": "Owner", "Value": "bob@example.com"}],
    )
    set_sagemaker_time("endpoint", ENDPOINT, REGION, t0 - timedelta(days=20))
    variant = [{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": "AllTraffic"}]
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    cpu = [
        {
            "MetricName": "CPUUtilization",
            "Dimensions": variant,
            "Timestamp": midnight - timedelta(days=d, hours=-12),
            "Value": 2.5,
        }
        for d in range(1, 14)
    ]
    cloudwatch.put_metric_data(Namespace="/aws/sagemaker/Endpoints", MetricData=cpu)
    last_call = [
        {"MetricName": "Invocations", "Dimensions": variant, "Timestamp": midnight - timedelta(days=12), "Value": 40.0}
    ]
    cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=last_call)
    # Cost Explorer's SageMaker spend by usage type (the budget alert's "who drives the spend"): the
    # "Amazon SageMaker" service line of the demo's bill, split between the endpoint and the notebook.
    (start, _), (previous_start, _) = periods(t0.date())
    now, before = OTHER_SERVICES["Amazon SageMaker"]
    host, notebook = "USE1-Host:ml.g4dn.xlarge", "USE1-Notebk:ml.p3.2xlarge"
    gaps.costs[("USAGE_TYPE", start.isoformat())] = {host: now * 0.45, notebook: now * 0.55}
    gaps.costs[("USAGE_TYPE", previous_start.isoformat())] = {host: before * 0.2, notebook: before * 0.8}
    sagemaker.create_domain(
        DomainName="research",
        AuthMode="IAM",
        DefaultUserSettings={"ExecutionRole": ROLE},  # no idle shutdown: Studio's default
        SubnetIds=["subnet-0demo"],
        VpcId="vpc-0demo",
    )


def scene(demo: Any, t0: datetime, step: Callable[[str], Any]) -> None:
    """Two sweeps: the warnings at t0-30 min, the notebook's stop after the 30-minute grace; the demo's clock
    is given back as it was. Each sweep's decisions go to the demo's scene log."""
    seed(demo.client, demo.account.gaps, t0)
    was = demo.clock
    first = "SageMaker's own sweep, back at the same morning (a function and schedule of its own)"
    notebook, endpoint = f"notebook/{NOTEBOOK}", f"endpoint/{ENDPOINT}"
    for clock, note, expected in (
        (t0 - timedelta(minutes=30), first, {notebook: "warn", endpoint: "warn", "Studio settings told": True}),
        (t0 + timedelta(minutes=3), "after the grace", {notebook: "act"}),
    ):
        demo.clock = clock
        title = f"{clock:%H:%M} sagemaker_stopper: {note} (events/sagemaker_stopper/sweep.json)"
        with step(title):
            result = demo.invoke("sagemaker_stopper", SWEEP, "sweep")["regions"][REGION]
            for decision in result["decisions"]:
                print(f"   {decision['key']}: {decision['action']} - {decision['reason'][:110]}")
            if result["idle_settings_reported"]:
                told = result["idle_settings_reported"]
                print(f"   {plural(told, 'Studio setting')} without idle shutdown, told to the alerts channel")
            for key in result["acted"]:
                demo.timeline.append([f"{clock:%H:%M}", key, REGION, "stop", "idle after the warning"])
        got = {d["key"]: d["action"] for d in result["decisions"]}
        demo.scenes.expect(title, expected, {**got, "Studio settings told": bool(result["idle_settings_reported"])})
    demo.clock = was
    state = demo.client("sagemaker").describe_notebook_instance(NotebookInstanceName=NOTEBOOK)["NotebookInstanceStatus"]
    print(f"   {NOTEBOOK} is now {state}; {ENDPOINT} stays (EndpointsDelete is off), its owner told what it costs")
    demo.scenes.expect(f"{NOTEBOOK} stopped", {"stopped": True}, {"stopped": state in ("Stopping", "Stopped")})
