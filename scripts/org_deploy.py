"""`make org-deploy` and `make org-uninstall` (`python -m scripts.org_deploy deploy|uninstall`): costguard in every
account of chosen organizational units, from the management account or a delegated CloudFormation administrator.

deploy: the translated template (make org-template) and the built code (sam build) go to an artifact bucket per
region (scripts/org/artifact-bucket.yaml, readable by the organization only); the hub stack is created or updated
in this account; a service-managed StackSet deploys the member stack to every account of the chosen units, and
to every account moved into them later (automatic deployment). It prints what it will do and asks first (--yes).

uninstall: removes the StackSet's instances (waited for), then the StackSet, and says what outlives them.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from samtranslator.yaml_helper import yaml_parse

from scripts.translate_template import OUTPUT, code_locations

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam" / "build"
BUCKET_TEMPLATE = ROOT / "scripts" / "org" / "artifact-bucket.yaml"
# The member stacks' roles are generated (CAPABILITY_IAM) and, for the organization's fixed names, named.
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"]
# One account's failure must not stop the others; a region at a time keeps a bad release from spreading far.
OPERATION_PREFERENCES = {
    "RegionConcurrencyType": "SEQUENTIAL",
    "FailureTolerancePercentage": 10,
    "MaxConcurrentPercentage": 25,
}
DONE = {"SUCCEEDED", "FAILED", "STOPPED"}

Clients = Callable[[str, str], Any]
Ask = Callable[[str], str]


@dataclass(frozen=True)
class OrgDeployment:
    """What the operator chose: where the hub and the members go, and their parameters."""

    stack_name: str
    stackset_name: str
    hub_region: str
    regions: tuple[str, ...]
    units: tuple[str, ...]
    bucket_prefix: str
    release: str
    member_parameters: dict[str, str] = field(default_factory=dict)
    hub_parameters: dict[str, str] = field(default_factory=dict)

    @property
    def artifact_regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.hub_region, *self.regions)))

    def bucket(self, region: str) -> str:
        return f"{self.bucket_prefix}-{region}"

    def template_url(self) -> str:
        return f"https://{self.bucket(self.hub_region)}.s3.{self.hub_region}.amazonaws.com/{self.release}/template.json"

    def artifact_parameters(self) -> dict[str, str]:
        return {"ArtifactBucketPrefix": self.bucket_prefix, "ArtifactKeyPrefix": self.release}


@dataclass(frozen=True)
class Caller:
    account: str
    organization_id: str
    management_account: str

    @property
    def call_as(self) -> str:
        """The management account acts as itself; any other account only as the delegated administrator."""
        return "SELF" if self.account == self.management_account else "DELEGATED_ADMIN"


def read_caller(sts: Any, organizations: Any) -> Caller:
    organization = organizations.describe_organization()["Organization"]
    return Caller(
        account=sts.get_caller_identity()["Account"],
        organization_id=organization["Id"],
        management_account=organization["MasterAccountId"],
    )


def _parameters(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"ParameterKey": key, "ParameterValue": value} for key, value in sorted(values.items())]


def figures_queue_arn(deployment: OrgDeployment, caller: Caller) -> str:
    """The hub's figures queue, by the name the hub's stack gives it in an organization (<stack>-figures)."""
    return f"arn:aws:sqs:{deployment.hub_region}:{caller.account}:{deployment.stack_name}-figures"


def member_parameters(deployment: OrgDeployment, caller: Caller) -> dict[str, str]:
    """What every member stack is told: the organization and the hub's account, region and stack name, from which
    it derives the names it shares with the hub (its click queue, the hub's figures queue, the hub's Slack relay it
    posts through); no ARN of a member, and no Slack secret."""
    return {
        **deployment.member_parameters,
        **deployment.artifact_parameters(),
        "OrganizationId": caller.organization_id,
        "HubAccountId": caller.account,
        "HubRegion": deployment.hub_region,
        "HubStackName": deployment.stack_name,
        "HubFiguresQueueArn": figures_queue_arn(deployment, caller),
    }


def hub_parameters(deployment: OrgDeployment, caller: Caller) -> dict[str, str]:
    return {
        **deployment.hub_parameters,
        **deployment.artifact_parameters(),
        "OrganizationId": caller.organization_id,
        "OrganizationUnits": ",".join(deployment.units),  # the digest names their accounts that do not report
        "MembersStackSetName": deployment.stackset_name,  # its failures in an account reach the alerts channel
    }


def stackset_request(deployment: OrgDeployment, caller: Caller) -> dict[str, Any]:
    """CreateStackSet's (and, less the permission model, UpdateStackSet's) request."""
    return {
        "StackSetName": deployment.stackset_name,
        "Description": f"costguard in every account of {', '.join(deployment.units)} (hub: {caller.account})",
        "TemplateURL": deployment.template_url(),
        "Parameters": _parameters(member_parameters(deployment, caller)),
        "Capabilities": CAPABILITIES,
        "PermissionModel": "SERVICE_MANAGED",
        # An account that leaves the units loses its stack: what stays is listed by make org-uninstall's words.
        "AutoDeployment": {"Enabled": True, "RetainStacksOnAccountRemoval": False},
        "ManagedExecution": {"Active": True},
        "CallAs": caller.call_as,
    }


def existing_stackset(cloudformation: Any, deployment: OrgDeployment, caller: Caller) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = cloudformation.describe_stack_set(
            StackSetName=deployment.stackset_name, CallAs=caller.call_as
        )["StackSet"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "StackSetNotFoundException":
            return None
        raise
    return found


def deployed_targets(cloudformation: Any, deployment: OrgDeployment, caller: Caller) -> tuple[set[str], set[str]]:
    """The units and the regions the StackSet already has instances in."""
    units, regions = set(), set()
    paginator = cloudformation.get_paginator("list_stack_instances")
    for page in paginator.paginate(StackSetName=deployment.stackset_name, CallAs=caller.call_as):
        for summary in page["Summaries"]:
            units.add(summary["OrganizationalUnitId"])
            regions.add(summary["Region"])
    return units, regions


def instance_requests(deployment: OrgDeployment, deployed: tuple[set[str], set[str]]) -> list[dict[str, Any]]:
    """CreateStackInstances for what is not deployed yet: new units in every region, old units in new regions."""
    old_units, old_regions = deployed
    new_units = [u for u in deployment.units if u not in old_units]
    kept_units = [u for u in deployment.units if u in old_units]
    new_regions = [r for r in deployment.regions if r not in old_regions]
    requests = []
    if new_units:
        requests.append({"OrganizationalUnitIds": new_units, "Regions": list(deployment.regions)})
    if kept_units and new_regions:
        requests.append({"OrganizationalUnitIds": kept_units, "Regions": new_regions})
    return requests


def wait_for_operation(
    cloudformation: Any, name: str, operation_id: str, call_as: str, sleep: Callable[[float], None] = time.sleep
) -> str:
    """StackSet operations run one at a time: each is waited for before the next is asked."""
    while True:
        status: str = cloudformation.describe_stack_set_operation(
            StackSetName=name, OperationId=operation_id, CallAs=call_as
        )["StackSetOperation"]["Status"]
        if status in DONE:
            return status
        sleep(15)


# ----------------------------------------------------------------------------------------- what deploy does
@dataclass
class Step:
    says: str
    run: Callable[[], None]


def artifact_zips() -> dict[str, bytes]:
    """Each function's and the layer's built folder (sam build), zipped, by its artifact key."""
    zips = {}
    for logical_id, key in code_locations(yaml_parse((ROOT / "template.yaml").read_text())).items():
        folder = BUILD / logical_id
        if not folder.is_dir():
            raise SystemExit(f"{folder} is missing: run `make build` first")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(folder).as_posix())
        zips[key] = buffer.getvalue()
    return zips


def ensure_stack(cloudformation: Any, name: str, request: dict[str, Any]) -> None:
    """Create the stack, or update it; waited for. "No updates are to be performed" is not a failure."""
    try:
        cloudformation.describe_stacks(StackName=name)
        exists = True
    except ClientError as error:
        if "does not exist" not in error.response["Error"]["Message"]:
            raise
        exists = False
    if not exists:
        cloudformation.create_stack(StackName=name, **request)
        cloudformation.get_waiter("stack_create_complete").wait(StackName=name)
        return
    try:
        cloudformation.update_stack(StackName=name, **request)
    except ClientError as error:
        if "No updates are to be performed" in error.response["Error"]["Message"]:
            return
        raise
    cloudformation.get_waiter("stack_update_complete").wait(StackName=name)


def deploy_steps(
    clients: Clients,
    deployment: OrgDeployment,
    caller: Caller,
    template: bytes,
    zips: dict[str, bytes],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Step]:
    steps = []
    for region in deployment.artifact_regions:
        bucket = deployment.bucket(region)

        def publish(region: str = region, bucket: str = bucket) -> None:
            ensure_stack(
                clients("cloudformation", region),
                f"{deployment.stack_name}-artifacts",
                {
                    "TemplateBody": BUCKET_TEMPLATE.read_text(),
                    "Parameters": _parameters(
                        {"BucketPrefix": deployment.bucket_prefix, "OrganizationId": caller.organization_id}
                    ),
                },
            )
            s3 = clients("s3", region)
            for key, body in zips.items():
                s3.put_object(Bucket=bucket, Key=f"{deployment.release}/{key}", Body=body)
            if region == deployment.hub_region:
                s3.put_object(Bucket=bucket, Key=f"{deployment.release}/template.json", Body=template)

        steps.append(
            Step(
                f"{region}: the artifact bucket {bucket} (readable by {caller.organization_id}), the release "
                f"{deployment.release}: {len(zips)} zips",
                publish,
            )
        )
    hub_cfn = clients("cloudformation", deployment.hub_region)
    steps.append(
        Step(
            f"{deployment.hub_region}: the hub stack {deployment.stack_name} in this account ({caller.account})",
            lambda: ensure_stack(
                hub_cfn,
                deployment.stack_name,
                {
                    "TemplateURL": deployment.template_url(),
                    "Parameters": _parameters(hub_parameters(deployment, caller)),
                    "Capabilities": CAPABILITIES,
                },
            ),
        )
    )
    steps.append(
        Step(
            f"the StackSet {deployment.stackset_name} (service-managed, as {caller.call_as}): every account of "
            f"{', '.join(deployment.units)} in {', '.join(deployment.regions)}, and each account moved into them "
            "later; an account that leaves them loses its stack",
            lambda: apply_stackset(hub_cfn, deployment, caller, sleep),
        )
    )
    return steps


def apply_stackset(
    cloudformation: Any, deployment: OrgDeployment, caller: Caller, sleep: Callable[[float], None] = time.sleep
) -> None:
    request = stackset_request(deployment, caller)
    name, call_as = deployment.stackset_name, caller.call_as
    if existing_stackset(cloudformation, deployment, caller) is None:
        cloudformation.create_stack_set(**request)
        deployed: tuple[set[str], set[str]] = (set(), set())
    else:
        update = {k: v for k, v in request.items() if k != "ManagedExecution"}
        update["OperationPreferences"] = OPERATION_PREFERENCES
        operation = cloudformation.update_stack_set(**update)["OperationId"]
        _check(wait_for_operation(cloudformation, name, operation, call_as, sleep), "update", name)
        deployed = deployed_targets(cloudformation, deployment, caller)
    for targets in instance_requests(deployment, deployed):
        operation = cloudformation.create_stack_instances(
            StackSetName=name,
            DeploymentTargets={"OrganizationalUnitIds": targets["OrganizationalUnitIds"]},
            Regions=targets["Regions"],
            OperationPreferences=OPERATION_PREFERENCES,
            CallAs=call_as,
        )["OperationId"]
        _check(wait_for_operation(cloudformation, name, operation, call_as, sleep), "stack instances", name)


def _check(status: str, what: str, name: str) -> None:
    if status != "SUCCEEDED":
        raise SystemExit(f"the StackSet {name}'s {what} operation ended {status}: see its operation in the console")


# ------------------------------------------------------------------------------------------- uninstall
OUTLIVES = [
    'the hub stack in this account (remove it with `make uninstall ARGS="--stack-name ..."`)',
    "in each member account, what `make uninstall` lists as kept: the state table and trail bucket (retained), "
    "the costguard: tags on machines, the CloudWatch alarms and dashboards costguard made at run time",
    "the artifact buckets <prefix>-<region> and the stacks that made them (kept: DeletionPolicy Retain)",
]


def uninstall_steps(
    cloudformation: Any, deployment: OrgDeployment, caller: Caller, sleep: Callable[[float], None] = time.sleep
) -> list[Step]:
    if existing_stackset(cloudformation, deployment, caller) is None:
        return []
    units, regions = deployed_targets(cloudformation, deployment, caller)
    name, call_as = deployment.stackset_name, caller.call_as

    def remove_instances() -> None:
        operation = cloudformation.delete_stack_instances(
            StackSetName=name,
            DeploymentTargets={"OrganizationalUnitIds": sorted(units)},
            Regions=sorted(regions),
            RetainStacks=False,
            OperationPreferences=OPERATION_PREFERENCES,
            CallAs=call_as,
        )["OperationId"]
        _check(wait_for_operation(cloudformation, name, operation, call_as, sleep), "delete instances", name)

    steps = []
    if units:
        steps.append(
            Step(f"the stacks of {name} in {', '.join(sorted(units))}, {', '.join(sorted(regions))}", remove_instances)
        )
    steps.append(
        Step(f"the StackSet {name}", lambda: cloudformation.delete_stack_set(StackSetName=name, CallAs=call_as))
    )
    return steps


# ------------------------------------------------------------------------------------------------ main
def run(steps: list[Step], *, yes: bool, ask: Ask, heading: str, after: Sequence[str] = ()) -> int:
    print(heading)
    for step in steps:
        print(f"  - {step.says}")
    for line in after:
        print(f"  kept: {line}")
    if not steps:
        print("  nothing to do")
        return 0
    if not yes and ask("Go ahead? [y/N] ").strip().lower() not in {"y", "yes"}:
        print("Nothing done.")
        return 1
    for step in steps:
        print(f"… {step.says}")
        step.run()
    print("Done.")
    return 0


def _pairs(values: Sequence[str]) -> dict[str, str]:
    pairs = [value.partition("=") for value in values]
    bad = [key for key, eq, _ in pairs if not eq]
    if bad:
        raise SystemExit(f"parameters are Key=Value: {', '.join(bad)}")
    return {key: value for key, _, value in pairs}


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parse(argv: Sequence[str] | None) -> tuple[str, OrgDeployment, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["deploy", "uninstall"])
    parser.add_argument("--stack-name", default="costguard", help="the hub stack (and the members' names' root)")
    parser.add_argument("--stackset-name", default="costguard-members")
    parser.add_argument("--region", required=True, help="the hub's region, where the StackSet is administered")
    parser.add_argument("--regions", type=_csv, default=(), help="the members' regions, comma-separated")
    parser.add_argument("--units", type=_csv, default=(), help="organizational unit ids (ou-...), comma-separated")
    parser.add_argument("--bucket-prefix", default="", help="artifact buckets: <prefix>-<region>")
    parser.add_argument(
        "--release",
        default="",
        help="the artifacts' key prefix, new for each release (make org-deploy: costguard/<commit>)",
    )
    parser.add_argument("--parameter", action="append", default=[], help="a member stack's Key=Value")
    parser.add_argument("--hub-parameter", action="append", default=[], help="the hub stack's Key=Value")
    parser.add_argument("--profile")
    parser.add_argument("--yes", action="store_true", help="do it without asking")
    args = parser.parse_args(argv)
    if args.action == "deploy" and not (args.regions and args.units and args.bucket_prefix and args.release):
        parser.error("deploy needs --regions, --units, --bucket-prefix and --release")
    deployment = OrgDeployment(
        stack_name=args.stack_name,
        stackset_name=args.stackset_name,
        hub_region=args.region,
        regions=args.regions or (args.region,),
        units=args.units,
        bucket_prefix=args.bucket_prefix,
        release=args.release,
        member_parameters=_pairs(args.parameter),
        hub_parameters=_pairs(args.hub_parameter),
    )
    return args.action, deployment, args


def main(argv: Sequence[str] | None = None, clients: Clients | None = None, ask: Ask = input) -> int:
    action, deployment, args = parse(argv)
    if clients is None:
        session = boto3.Session(profile_name=args.profile)

        def clients(service: str, region: str) -> Any:
            return session.client(service, region_name=region)  # type: ignore[call-overload]

    caller = read_caller(clients("sts", deployment.hub_region), clients("organizations", deployment.hub_region))
    cloudformation = clients("cloudformation", deployment.hub_region)
    if action == "uninstall":
        return run(
            uninstall_steps(cloudformation, deployment, caller),
            yes=args.yes,
            ask=ask,
            heading=f"make org-uninstall would remove, as {caller.call_as} in {caller.account}:",
            after=OUTLIVES,
        )
    if not OUTPUT.is_file():
        raise SystemExit(f"{OUTPUT} is missing: run `make org-template` first")
    template = OUTPUT.read_bytes()
    json.loads(template)  # a half-written translation is refused here, not by CloudFormation
    steps = deploy_steps(clients, deployment, caller, template, artifact_zips())
    return run(steps, yes=args.yes, ask=ask, heading=f"make org-deploy would, as {caller.call_as} in {caller.account}:")


if __name__ == "__main__":
    sys.exit(main())
