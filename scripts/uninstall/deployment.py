"""The deployment being removed: its stack while it exists, the regions it governed, the names of what it retains.

After `sam delete` (or a stack deleted by hand) there is no stack to ask: the retained table and bucket are then
found by the tags CloudFormation gave them (`aws:cloudformation:stack-name`, `aws:cloudformation:logical-id`), or
named with `--state-table` and `--trail-bucket`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError, WaiterError

# The logical IDs of template.yaml's resources the uninstall needs by name.
STATE_TABLE = "StateTable"
TRAIL_BUCKET = "TrailBucket"
NOTEBOOK_CONFIG = "NotebookActivityConfig"
HOST_MANAGEMENT_ROLE = "HostManagementRole"
STACK_NAME_TAG = "aws:cloudformation:stack-name"
LOGICAL_ID_TAG = "aws:cloudformation:logical-id"
DEFAULT_SECRET = "costguard/slack"  # noqa: S105 (a name, not a password: the template's SlackSecretName default)
# A stack of a dozen functions deletes in a few minutes; CloudFormation gives up on a resource long before this.
DELETE_WAIT = {"Delay": 15, "MaxAttempts": 240}


@dataclass(frozen=True)
class Deployment:
    stack_name: str
    region: str  # where the stack is (or was): its state table, trail bucket and lifecycle configuration
    exists: bool
    regions: tuple[str, ...]  # every region it governed: alarms, dashboards and tags may be in any of them
    state_table: str = ""
    trail_bucket: str = ""
    slack_secret: str = DEFAULT_SECRET
    owner_tag_key: str = "Owner"  # the template's OwnerTagKey default
    stack_id: str = ""
    # DefaultHostManagement's role (the stack's HostManagementRole), which Systems Manager's setting names in each
    # governed region where costguard turned it on: its delete resets them; one it could not is reset after it.
    host_management_role: str = ""

    @property
    def notebook_config(self) -> str:
        """template.yaml's NotebookActivityConfig name: the stack's name, then `-notebook-activity`."""
        return f"{self.stack_name}-notebook-activity"


def samconfig_defaults(path: Path, env: str) -> dict[str, str]:
    """stack_name, region and profile as `sam deploy --config-env <env>` reads them from samconfig.toml (the
    command's own table over the environment's global one)."""
    if not path.exists():
        return {}
    config = tomllib.loads(path.read_text())
    section = config.get(env, {})
    out: dict[str, str] = {}
    for command in ("global", "deploy"):
        values = section.get(command, {}).get("parameters", {})
        out.update({k: str(values[k]) for k in ("stack_name", "region", "profile") if k in values})
    return out


def read_deployment(
    cloudformation: Any,
    tagging: Any,
    *,
    stack_name: str,
    region: str,
    regions: tuple[str, ...] = (),
    state_table: str = "",
    trail_bucket: str = "",
) -> Deployment:
    """The stack's parameters and retained resources while it exists; else what CloudFormation's tags still say."""
    stack = _stack(cloudformation, stack_name)
    if stack is None:
        found = _retained_by_tags(tagging, stack_name)
        return Deployment(
            stack_name=stack_name,
            region=region,
            exists=False,
            regions=_regions(regions, "", region),
            state_table=state_table or found.get(STATE_TABLE, ""),
            trail_bucket=trail_bucket or found.get(TRAIL_BUCKET, ""),
        )
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    resources: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack["StackId"]):
        for summary in page.get("StackResourceSummaries", []):
            resources[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    return Deployment(
        stack_name=stack_name,
        region=region,
        exists=True,
        regions=_regions(regions, parameters.get("GovernedRegions", ""), region),
        state_table=state_table or resources.get(STATE_TABLE, ""),
        trail_bucket=trail_bucket or resources.get(TRAIL_BUCKET, ""),
        slack_secret=parameters.get("SlackSecretName") or DEFAULT_SECRET,
        owner_tag_key=parameters.get("OwnerTagKey") or "Owner",
        stack_id=stack["StackId"],
        host_management_role=resources.get(HOST_MANAGEMENT_ROLE, ""),
    )


def delete_stack(cloudformation: Any, deployment: Deployment) -> None:
    """DeleteStack, then wait for it: the leftovers are looked for only once no function of it can run again."""
    cloudformation.delete_stack(StackName=deployment.stack_id or deployment.stack_name)
    try:
        cloudformation.get_waiter("stack_delete_complete").wait(
            StackName=deployment.stack_id or deployment.stack_name, WaiterConfig=DELETE_WAIT
        )
    except WaiterError as exc:
        last: dict[str, Any] = dict(exc.last_response or {})
        reason = (last.get("Stacks") or [{}])[0].get("StackStatusReason", str(exc))
        raise RuntimeError(f"the stack {deployment.stack_name} was not deleted: {reason}") from exc


def _stack(cloudformation: Any, stack_name: str) -> dict[str, Any] | None:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        message = str(exc.response.get("Error", {}).get("Message", ""))
        if exc.response.get("Error", {}).get("Code") == "ValidationError" and "does not exist" in message:
            return None
        raise
    live = [s for s in stacks if s.get("StackStatus") != "DELETE_COMPLETE"]
    return live[0] if live else None


def _retained_by_tags(tagging: Any, stack_name: str) -> dict[str, str]:
    """Logical ID → name of the stack's retained table and bucket, by the tags CloudFormation put on them."""
    found: dict[str, str] = {}
    pages = tagging.get_paginator("get_resources").paginate(
        TagFilters=[{"Key": STACK_NAME_TAG, "Values": [stack_name]}],
        ResourceTypeFilters=["dynamodb:table", "s3:bucket"],
    )
    for page in pages:
        for mapping in page.get("ResourceTagMappingList", []):
            tags = {t["Key"]: t["Value"] for t in mapping.get("Tags", [])}
            logical = tags.get(LOGICAL_ID_TAG, "")
            arn = mapping["ResourceARN"]
            if logical in (STATE_TABLE, TRAIL_BUCKET):
                # arn:aws:dynamodb:<region>:<account>:table/<name>, arn:aws:s3:::<name>
                found[logical] = arn.rsplit("/", 1)[-1] if logical == STATE_TABLE else arn.rsplit(":", 1)[-1]
    return found


def _regions(given: tuple[str, ...], governed: str, home: str) -> tuple[str, ...]:
    """The regions to clean: those given, else the stack's GovernedRegions (empty: its own region), with its own."""
    chosen = list(given) or [r.strip() for r in governed.split(",") if r.strip()]
    return tuple(dict.fromkeys([home, *chosen]))
