"""What outlives the stack in its own region: notebook instances still using its lifecycle configuration, log groups
Lambda wrote again after the stack deleted them, scale-in protection costguard set (read from its ledger), and the
state table and trail bucket the stack retains on purpose."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError
from samtranslator.yaml_helper import yaml_parse

from costguard.state.entries import EntryKind
from scripts.uninstall.deployment import Deployment
from scripts.uninstall.leftovers import READ_ERRORS, Finding, code_of, removal
from scripts.uninstall.plan import Kept, Step, batches

# SageMaker changes a notebook instance's lifecycle configuration only while it is stopped.
CHANGEABLE = ("Stopped", "Failed")
AUTOSCALING_IDS = 50  # DescribeAutoScalingInstances and SetInstanceProtection take 50 instances a call
OBJECTS_PER_DELETE = 1000  # DeleteObjects' limit
DATA_WHY = "retained by the stack on purpose: {what} (--delete-data deletes it)"


def notebook_users(sagemaker: Any, deployment: Deployment) -> tuple[list[Step], list[str]]:
    """Notebook instances that start with costguard's lifecycle configuration: detached while stopped; a running
    one blocks the uninstall (stopping someone's notebook is its owner's call, and once the configuration is
    deleted a notebook that still names it may not start)."""
    config = deployment.notebook_config
    steps: list[Step] = []
    blocked: list[str] = []
    pages = sagemaker.get_paginator("list_notebook_instances").paginate(
        NotebookInstanceLifecycleConfigNameContains=config
    )
    for page in pages:
        for notebook in page.get("NotebookInstances", []):
            if notebook.get("NotebookInstanceLifecycleConfigName") != config:
                continue
            name, status = notebook["NotebookInstanceName"], notebook.get("NotebookInstanceStatus", "")
            if status in CHANGEABLE:
                call = removal(
                    sagemaker.update_notebook_instance, NotebookInstanceName=name, DisassociateLifecycleConfig=True
                )
                steps.append(Step(f"{deployment.region}: lifecycle configuration {config} detached from {name}", call))
            else:
                blocked.append(
                    f"{deployment.region}: notebook instance {name} is {status} with costguard's lifecycle "
                    f"configuration {config}; SageMaker detaches it only from a stopped notebook: ask its owner to "
                    "stop it, then run this again"
                )
    return steps, blocked


def notebook_config(sagemaker: Any, deployment: Deployment) -> list[Step]:
    """The lifecycle configuration itself, when the stack is gone and it is not."""
    name = deployment.notebook_config
    try:
        sagemaker.describe_notebook_instance_lifecycle_config(NotebookInstanceLifecycleConfigName=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ValidationException":  # SageMaker's "does not exist"
            return []
        raise
    call = removal(sagemaker.delete_notebook_instance_lifecycle_config, NotebookInstanceLifecycleConfigName=name)
    return [Step(f"{deployment.region}: notebook lifecycle configuration {name}", call)]


def function_ids(template: Path) -> list[str]:
    """The logical IDs of template.yaml's functions: CloudFormation names each `<stack>-<logical id>-<suffix>`."""
    resources = yaml_parse(template.read_text())["Resources"]
    return sorted(k for k, v in resources.items() if v.get("Type") == "AWS::Serverless::Function")


def log_groups(logs: Any, deployment: Deployment, functions: Sequence[str]) -> list[Step]:
    """The functions' log groups still there after the stack: Lambda writes one again for an invocation that ran
    while the stack was being deleted."""
    steps = []
    for logical in functions:
        prefix = f"/aws/lambda/{deployment.stack_name}-{logical}-"
        for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=prefix):
            for group in page.get("logGroups", []):
                name = group["logGroupName"]
                steps.append(
                    Step(f"{deployment.region}: log group {name}", removal(logs.delete_log_group, logGroupName=name))
                )
    return steps


def protections(dynamodb: Any, autoscaling: Any, deployment: Deployment, unread: list[str]) -> list[Step]:
    """Auto Scaling members costguard protected from scale-in (its ledger's last word on each is `protect`) and that
    are protected still: released, or their group would never scale them in once costguard is gone."""
    if not deployment.state_table:
        unread.append("scale-in protection costguard set: no state table known to read it from (--state-table)")
        return []
    latest: dict[tuple[str, str], tuple[str, str, bool]] = {}  # (region, instance) -> (at, kind, applied)
    deserialize = TypeDeserializer().deserialize
    try:
        pages = dynamodb.get_paginator("scan").paginate(
            TableName=deployment.state_table,
            FilterExpression="#kind IN (:protect, :unprotect)",
            ExpressionAttributeNames={"#kind": "kind"},
            ExpressionAttributeValues={":protect": {"S": EntryKind.PROTECT}, ":unprotect": {"S": EntryKind.UNPROTECT}},
        )
        for page in pages:
            for raw in page.get("Items", []):
                item = {k: deserialize(v) for k, v in raw.items()}
                key = (str(item["region"]), str(item["instance_id"]))
                seen = (str(item["at"]), str(item["kind"]), bool(item.get("applied", True)))
                latest[key] = max(latest.get(key, seen), seen)
    except READ_ERRORS as exc:
        unread.append(f"scale-in protection costguard set: the state table {deployment.state_table}: {code_of(exc)}")
        return []
    ours: dict[str, list[str]] = defaultdict(list)
    for (region, instance_id), (_, kind, applied) in sorted(latest.items()):
        if kind == EntryKind.PROTECT and applied:
            ours[region].append(instance_id)
    steps = []
    for region, instance_ids in sorted(ours.items()):
        steps += _release(autoscaling(region), region, instance_ids)
    return steps


def _release(client: Any, region: str, instance_ids: list[str]) -> list[Step]:
    groups: dict[str, list[str]] = defaultdict(list)
    for batch in batches(instance_ids, AUTOSCALING_IDS):
        for member in client.describe_auto_scaling_instances(InstanceIds=batch).get("AutoScalingInstances", []):
            if member.get("ProtectedFromScaleIn"):
                groups[member["AutoScalingGroupName"]].append(member["InstanceId"])
    steps = []
    for group, members in sorted(groups.items()):
        for batch in batches(sorted(members), AUTOSCALING_IDS):
            call = removal(
                client.set_instance_protection,
                AutoScalingGroupName=group,
                InstanceIds=batch,
                ProtectedFromScaleIn=False,
            )
            steps.append(Step(f"{region}: scale-in protection costguard set on {', '.join(batch)} ({group})", call))
    return steps


def data(dynamodb: Any, s3: Any, deployment: Deployment, *, delete: bool) -> Finding:
    steps: list[Step] = []
    kept: list[Kept] = []
    region = deployment.region
    if deployment.state_table and _exists(dynamodb.describe_table, TableName=deployment.state_table):
        what = f"{region}: the state table {deployment.state_table}"
        if delete:
            steps.append(Step(what, removal(dynamodb.delete_table, TableName=deployment.state_table)))
        else:
            kept.append(Kept(what, DATA_WHY.format(what="costguard's ledger of what it did")))
    if deployment.trail_bucket and _exists(s3.head_bucket, Bucket=deployment.trail_bucket):
        what = f"{region}: the trail bucket {deployment.trail_bucket}"
        if delete:
            steps.append(Step(f"{what}, emptied", lambda: _empty_and_delete(s3, deployment.trail_bucket)))
        else:
            kept.append(Kept(what, DATA_WHY.format(what="CloudTrail's logs, which expire after 90 days")))
    kept.append(
        Kept(
            f"the Slack secret {deployment.slack_secret}",
            f"yours, not costguard's: aws secretsmanager delete-secret --secret-id {deployment.slack_secret}",
        )
    )
    kept.append(
        Kept(
            f"the {deployment.owner_tag_key} tags on instances, volumes and SageMaker resources",
            "who launched what: the account's, and perhaps its cost allocation reports'",
        )
    )
    return steps, kept


def _exists(describe: Any, **kwargs: str) -> bool:
    try:
        describe(**kwargs)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("ResourceNotFoundException", "404", "NoSuchBucket", "NotFound"):
            return False
        raise
    return True


def _empty_and_delete(s3: Any, bucket: str) -> None:
    """Every object version and delete marker, a thousand a call, then the bucket."""
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        keys = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        ]
        for start in range(0, len(keys), OBJECTS_PER_DELETE):
            s3.delete_objects(
                Bucket=bucket, Delete={"Objects": keys[start : start + OBJECTS_PER_DELETE], "Quiet": True}
            )
    s3.delete_bucket(Bucket=bucket)
