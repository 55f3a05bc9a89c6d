"""What costguard made at run time, outside its stack, found region by region, each with the call that removes it.

Each finder pages through its list (every AWS list here is paged) and takes only what carries costguard's names:
the idle alarms' prefix (core.names), the dashboards' `costguard-<team>-<region>` (digest/weekly/dashboards.py),
the `costguard:` tag prefix (core.tags). Nothing else in the account is touched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.ssm import HOST_MANAGEMENT_SETTING
from costguard.core import tags
from costguard.core.names import ALARM_PREFIX
from scripts.uninstall.plan import Kept, Step, batches

DASHBOARD_PREFIX = "costguard-"
ALARMS_PER_DELETE = 100  # DeleteAlarms' limit
DASHBOARDS_PER_DELETE = 100
EC2_TAG_RESOURCES = 500  # resources per DeleteTags call, as costguard's own tag writes (aws/ec2.TAG_BATCH)
SAGEMAKER_TAG_KEYS = 50  # DeleteTags' TagKeys limit
PEOPLE_WHY = "a person's word to costguard, kept for a reinstall (--delete-data removes it)"

Finding = tuple[list[Step], list[Kept]]
# What a finder may meet: AWS's refusal, a transport error after the retries, or (moto) an operation it lacks.
READ_ERRORS = (ClientError, BotoCoreError, NotImplementedError)


def alarms(cloudwatch: Any, region: str) -> list[Step]:
    names = [
        alarm["AlarmName"]
        for page in cloudwatch.get_paginator("describe_alarms").paginate(
            AlarmNamePrefix=ALARM_PREFIX, AlarmTypes=["MetricAlarm"]
        )
        for alarm in page.get("MetricAlarms", [])
    ]
    return [
        Step(f"{region}: CloudWatch alarms {', '.join(batch)}", removal(cloudwatch.delete_alarms, AlarmNames=batch))
        for batch in batches(sorted(names), ALARMS_PER_DELETE)
    ]


def is_costguard_dashboard(name: str, region: str) -> bool:
    """A weekly digest's dashboard: `costguard-<team>-<region>`, one per team and region."""
    return name.startswith(DASHBOARD_PREFIX) and name.endswith(f"-{region}") and len(name) > len(DASHBOARD_PREFIX)


def dashboards(cloudwatch: Any, region: str) -> list[Step]:
    names = [
        entry["DashboardName"]
        for page in cloudwatch.get_paginator("list_dashboards").paginate(DashboardNamePrefix=DASHBOARD_PREFIX)
        for entry in page.get("DashboardEntries", [])
        if is_costguard_dashboard(entry["DashboardName"], region)
    ]
    return [
        Step(
            f"{region}: CloudWatch dashboards {', '.join(batch)}",
            removal(cloudwatch.delete_dashboards, DashboardNames=batch),
        )
        for batch in batches(sorted(names), DASHBOARDS_PER_DELETE)
    ]


def _removed(key: str, delete_people: bool) -> bool:
    return delete_people or key not in tags.SET_BY_PEOPLE


def ec2_tags(ec2: Any, region: str, *, delete_people: bool) -> Finding:
    """Every `costguard:` tag on the region's instances and volumes, which costguard tags: one DescribeTags walk.
    The same keys on a launch template or an image were put there by people (every launch from it exempt, say)."""
    holders: dict[str, set[str]] = defaultdict(set)  # key -> resource ids
    pages = ec2.get_paginator("describe_tags").paginate(
        Filters=[
            {"Name": "key", "Values": [f"{tags.PREFIX}*"]},
            {"Name": "resource-type", "Values": ["instance", "volume"]},
        ],
        PaginationConfig={"PageSize": 1000},
    )
    for page in pages:
        for tag in page.get("Tags", []):
            if tag["Key"].startswith(tags.PREFIX):  # the filter's wildcard, checked: AWS's `*` matches any text
                holders[tag["Key"]].add(tag["ResourceId"])
    steps, kept = [], []
    for key, ids in sorted(holders.items()):
        if not _removed(key, delete_people):
            kept.append(Kept(f"{region}: EC2 tag {key} on {', '.join(sorted(ids))}", PEOPLE_WHY))
            continue
        for batch in batches(sorted(ids), EC2_TAG_RESOURCES):
            call = removal(ec2.delete_tags, Resources=batch, Tags=[{"Key": key}])
            steps.append(Step(f"{region}: EC2 tag {key} on {', '.join(batch)}", call))
    return steps, kept


def sagemaker_tags(sagemaker: Any, region: str, *, delete_people: bool, unread: list[str]) -> Finding:
    """`costguard:` tags on the SageMaker resources costguard tags: notebook instances, endpoints, endpoint
    configurations (a deleted endpoint's record) and Studio apps."""
    steps, kept = [], []
    for arn in _sagemaker_arns(sagemaker, region, unread):
        keys = sorted(
            t["Key"]
            for page in sagemaker.get_paginator("list_tags").paginate(ResourceArn=arn)
            for t in page.get("Tags", [])
            if t["Key"].startswith(tags.PREFIX)
        )
        resource = arn.split(":", 5)[-1]  # notebook-instance/<name>, endpoint/<name>, app/<domain>/...
        ours = [k for k in keys if _removed(k, delete_people)]
        kept += [Kept(f"{region}: SageMaker tag {k} on {resource}", PEOPLE_WHY) for k in keys if k not in ours]
        for batch in batches(ours, SAGEMAKER_TAG_KEYS):
            call = removal(sagemaker.delete_tags, ResourceArn=arn, TagKeys=batch)
            steps.append(Step(f"{region}: SageMaker tags {', '.join(batch)} on {resource}", call))
    return steps, kept


def _sagemaker_arns(sagemaker: Any, region: str, unread: list[str]) -> Iterator[str]:
    listings = (
        ("list_notebook_instances", "NotebookInstances", "NotebookInstanceArn"),
        ("list_endpoints", "Endpoints", "EndpointArn"),
        ("list_endpoint_configs", "EndpointConfigs", "EndpointConfigArn"),
    )
    for operation, key, arn in listings:
        try:
            found = [item[arn] for page in sagemaker.get_paginator(operation).paginate() for item in page.get(key, [])]
        except READ_ERRORS as exc:
            unread.append(f"{region}: SageMaker {operation}: {code_of(exc)}")
            continue
        yield from found
    try:
        apps = [a for page in sagemaker.get_paginator("list_apps").paginate() for a in page.get("Apps", [])]
    except READ_ERRORS as exc:
        unread.append(f"{region}: SageMaker list_apps: {code_of(exc)}")
        return
    for app in apps:
        if app.get("Status") not in ("InService", "Pending"):
            continue  # a deleted app keeps no tags anyone can see or change
        holder = (
            {"SpaceName": app["SpaceName"]} if app.get("SpaceName") else {"UserProfileName": app["UserProfileName"]}
        )
        described = sagemaker.describe_app(
            DomainId=app["DomainId"], AppType=app["AppType"], AppName=app["AppName"], **holder
        )
        yield described["AppArn"]


def host_management(ssm: Any, region: str, role: str, unread: list[str]) -> list[Step]:
    """Systems Manager's Default Host Management Configuration where it still names costguard's role (the stack's
    delete resets it; one region it could not, say, is reset here), back to unset, as costguard found it: it sets
    no other value. A setting naming any other role is the account's, and is not touched."""
    try:
        found = ssm.get_service_setting(SettingId=HOST_MANAGEMENT_SETTING)["ServiceSetting"]
    except READ_ERRORS as exc:
        unread.append(f"{region}: Systems Manager get_service_setting: {code_of(exc)}")
        return []
    if not role or found.get("SettingValue") != role:
        return []
    what = f"{region}: Default Host Management Configuration naming costguard's role {role}, reset to unset"
    return [Step(what, removal(ssm.reset_service_setting, SettingId=HOST_MANAGEMENT_SETTING))]


def code_of(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "error"))
    return type(exc).__name__


def removal(method: Callable[..., Any], **kwargs: Any) -> Callable[[], None]:
    def run() -> None:
        method(**kwargs)

    return run
