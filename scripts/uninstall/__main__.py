"""`make uninstall` (`python -m scripts.uninstall`): a dry run that lists what it would remove and keep; `--yes`
removes it. In order: notebook instances detached from costguard's lifecycle configuration, the stack (waited
for), then what outlives it, looked for again once no function of it can run."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import RETRY_CONFIG
from scripts.uninstall import leftovers, retained
from scripts.uninstall.deployment import Deployment, delete_stack, read_deployment, samconfig_defaults
from scripts.uninstall.plan import Plan, Step

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = 3


class Clients:
    """One client per service and region, with costguard's adaptive retries: a throttled call waits and is sent
    again instead of failing the uninstall."""

    def __init__(self, session: boto3.Session) -> None:
        self.session = session
        self._made: dict[tuple[str, str], Any] = {}

    def __call__(self, service: str, region: str) -> Any:
        if (service, region) not in self._made:
            self._made[service, region] = self.session.client(  # type: ignore[call-overload]
                service, region_name=region, config=RETRY_CONFIG
            )
        return self._made[service, region]


def before_stack(clients: Clients, deployment: Deployment) -> Plan:
    plan = Plan()
    steps, plan.blocked = retained.notebook_users(clients("sagemaker", deployment.region), deployment)
    plan.add(steps)
    if deployment.exists:
        cloudformation = clients("cloudformation", deployment.region)
        plan.add(
            [
                Step(
                    f"{deployment.region}: the stack {deployment.stack_name}: its functions, roles, queues, schedules, "
                    "log groups, alarm, SSM document and notebook lifecycle configuration"
                    + (
                        ", and Default Host Management Configuration reset where costguard turned it on"
                        if deployment.host_management_role
                        else ""
                    ),
                    lambda: delete_stack(cloudformation, deployment),
                )
            ]
        )
    return plan


def after_stack(clients: Clients, deployment: Deployment, *, delete_data: bool) -> Plan:
    """What outlives the stack. While the stack still exists (a dry run), what it deletes itself is left out."""
    plan = Plan()
    home = deployment.region
    for region in deployment.regions:
        cloudwatch = clients("cloudwatch", region)
        plan.add(leftovers.alarms(cloudwatch, region) + leftovers.dashboards(cloudwatch, region))
        plan.add(*leftovers.ec2_tags(clients("ec2", region), region, delete_people=delete_data))
        plan.add(
            *leftovers.sagemaker_tags(
                clients("sagemaker", region), region, delete_people=delete_data, unread=plan.unread
            )
        )
    if not deployment.exists:
        for region in deployment.regions if deployment.host_management_role else ():
            ssm = clients("ssm", region)
            plan.add(leftovers.host_management(ssm, region, deployment.host_management_role, plan.unread))
        plan.add(retained.notebook_config(clients("sagemaker", home), deployment))
        plan.add(retained.log_groups(clients("logs", home), deployment, retained.function_ids(ROOT / "template.yaml")))
    plan.add(
        retained.protections(
            clients("dynamodb", home), lambda region: clients("autoscaling", region), deployment, plan.unread
        )
    )
    plan.add(*retained.data(clients("dynamodb", home), clients("s3", home), deployment, delete=delete_data))
    return plan


def run(steps: Sequence[Step]) -> int:
    """Each step in turn; one that fails is said and the rest still run (running again takes up what is left)."""
    failed = 0
    for step in steps:
        try:
            step.run()
        except (ClientError, BotoCoreError, RuntimeError) as exc:
            failed += 1
            print(f"FAILED  {step.what}: {exc}")
            continue
        print(f"removed {step.what}")
    return failed


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make uninstall", description=__doc__)
    parser.add_argument("--config-env", default="default", help="samconfig.toml environment (stack, region, profile)")
    parser.add_argument("--stack-name", help="the stack (default: samconfig.toml's, else costguard)")
    parser.add_argument("--region", help="the stack's region (default: samconfig.toml's, else your AWS config's)")
    parser.add_argument("--profile", help="AWS CLI profile (default: samconfig.toml's, else your AWS config's)")
    parser.add_argument(
        "--regions", help="every region costguard governed, comma-separated (default: the stack's GovernedRegions)"
    )
    parser.add_argument("--state-table", default="", help="the retained state table, when the stack is gone")
    parser.add_argument("--trail-bucket", default="", help="the retained trail bucket, when the stack is gone")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--keep-data", action="store_true", help="keep the table, the bucket, people's tags (default)")
    data.add_argument("--delete-data", action="store_true", help="delete them too")
    parser.add_argument("--yes", action="store_true", help="remove what is listed (without it: a dry run)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    defaults = samconfig_defaults(ROOT / "samconfig.toml", args.config_env)
    session = boto3.Session(
        profile_name=args.profile or defaults.get("profile"), region_name=args.region or defaults.get("region")
    )
    if not session.region_name:
        print("No region: give --region, or set one in samconfig.toml or your AWS config.")
        return 2
    clients = Clients(session)
    given = tuple(r.strip() for r in (args.regions or "").split(",") if r.strip())
    deployment = read_deployment(
        clients("cloudformation", session.region_name),
        clients("resourcegroupstaggingapi", session.region_name),
        stack_name=args.stack_name or defaults.get("stack_name") or "costguard",
        region=session.region_name,
        regions=given,
        state_table=args.state_table,
        trail_bucket=args.trail_bucket,
    )
    regions = ", ".join(deployment.regions)
    print(f"costguard uninstall: stack {deployment.stack_name} in {deployment.region}, regions {regions}")
    if not deployment.exists:
        print("The stack is gone (or was never here): what it retained is found by CloudFormation's tags.")
        if not given:
            print("Give --regions with every region it governed, or only this one is cleaned.")
    first = before_stack(clients, deployment)
    later = after_stack(clients, deployment, delete_data=args.delete_data)
    plan = Plan([*first.steps, *later.steps], later.kept, first.blocked, later.unread)
    print("\n".join(plan.lines()))
    if plan.blocked:
        print("Nothing was changed.")
        return BLOCKED
    if not args.yes:
        print("Dry run: nothing was changed. `make uninstall ARGS=--yes` removes what is listed.")
        return 0
    failed = run(first.steps)
    if failed:
        return 1
    gone = dataclasses.replace(deployment, exists=False)
    after = after_stack(clients, gone, delete_data=args.delete_data)  # again: the functions ran until now
    failed = run(after.steps)
    for note in after.unread:
        print(f"NOT READ {note}")
    print("\n".join(f"kept    {k.what}: {k.why}" for k in after.kept))
    return 1 if failed or after.unread else 0


if __name__ == "__main__":
    sys.exit(main())
