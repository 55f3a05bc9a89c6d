"""Run by tests/integration/test_uninstall.py in a process of its own (the demo sets its clock on the Runtime class
for good): `make demo`'s whole story, its two accounts left running, then `make uninstall` against each, as a dry
run, with `--yes`, then with `--yes --delete-data`. What costguard left in each account before and after each run is
written to <directory>/report.json with each run's output.

python -m tests.integration.demo_then_uninstall <directory>
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import demo.__main__ as demo_main
from costguard.core import tags
from costguard.core.names import ALARM_PREFIX
from demo import accounts, fleet
from scripts.uninstall.leftovers import is_costguard_dashboard

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"dry-run": [], "keep-data": ["--yes"], "delete-data": ["--yes", "--delete-data"]}


class LeftOpen(demo_main.Demo):
    """The demo's account, kept running when the demo ends, to be uninstalled."""

    last: LeftOpen | None = None

    def __init__(self) -> None:
        super().__init__()
        LeftOpen.last = self

    def close(self) -> None:
        self.log.close()


def left_behind(client: Any, regions: list[str], table: str, table_region: str) -> dict[str, Any]:
    """Everything costguard made that an uninstall must remove or name: by region, and its state table."""
    out: dict[str, Any] = {"regions": {}}
    for region in regions:
        cloudwatch, ec2 = client("cloudwatch", region), client("ec2", region)
        sagemaker = client("sagemaker", region)
        alarms = [a["AlarmName"] for a in cloudwatch.describe_alarms(AlarmNamePrefix=ALARM_PREFIX)["MetricAlarms"]]
        boards = [d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]]
        ec2_tags = [
            [t["ResourceId"], t["Key"]]
            for t in ec2.describe_tags(MaxResults=1000)["Tags"]
            if t["Key"].startswith(tags.PREFIX)
        ]
        arns = [n["NotebookInstanceArn"] for n in sagemaker.list_notebook_instances()["NotebookInstances"]]
        arns += [e["EndpointArn"] for e in sagemaker.list_endpoints()["Endpoints"]]
        arns += [c["EndpointConfigArn"] for c in sagemaker.list_endpoint_configs()["EndpointConfigs"]]
        sagemaker_tags = [
            [arn.split(":", 5)[-1], t["Key"]]
            for arn in arns
            for t in sagemaker.list_tags(ResourceArn=arn)["Tags"]
            if t["Key"].startswith(tags.PREFIX)
        ]
        groups = client("autoscaling", region).describe_auto_scaling_groups()["AutoScalingGroups"]
        protected = [i["InstanceId"] for g in groups for i in g.get("Instances", []) if i.get("ProtectedFromScaleIn")]
        out["regions"][region] = {
            "alarms": alarms,
            "dashboards": [b for b in boards if is_costguard_dashboard(b, region)],
            "other_dashboards": [b for b in boards if not is_costguard_dashboard(b, region)],
            "ec2_tags": ec2_tags,
            "sagemaker_tags": sagemaker_tags,
            "protected": protected,
        }
    out["table"] = table in client("dynamodb", table_region).list_tables()["TableNames"]
    return out


def uninstall(env: dict[str, str], arguments: list[str]) -> dict[str, Any]:
    """`make uninstall`, as an operator runs it, its AWS endpoint the demo's account."""
    # -o: the shared environment is installed already (a worktree's requirement files are newer than its stamp).
    command = ["make", "--no-print-directory", "-o", ".venv/bin/.installed", "uninstall", f"ARGS={' '.join(arguments)}"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    return {"rc": done.returncode, "output": done.stdout + done.stderr}


def main(directory: Path) -> int:
    os.chdir(directory)  # the demo writes demo-output/ here
    members: list[accounts.Member] = []
    join = accounts.join

    def joined(*args: Any, **kwargs: Any) -> accounts.Member:
        member = join(*args, **kwargs)
        members.append(member)
        return member

    accounts.join = joined
    demo_main.Demo = LeftOpen  # type: ignore[misc]
    told = demo_main.main()
    opened = LeftOpen.last
    assert opened is not None, "the demo did not start"
    assert members, "the demo's member account did not join"
    hub, member = opened.account, members[0]
    table = os.environ.get("STATE_TABLE", "costguard-state")
    report: dict[str, Any] = {"demo": told, "accounts": {}}
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        base.update(AWS_ENDPOINT_URL=hub.proxy.url, AWS_EC2_METADATA_DISABLED="true")
        credentials = member.session.get_credentials()
        assert credentials is not None
        sides = {
            "hub": (
                hub.client,
                fleet.HOME,
                [fleet.HOME, fleet.OTHER],
                {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"},
            ),
            "member": (
                member.client,
                accounts.REGION,
                [accounts.REGION],
                {
                    "AWS_ACCESS_KEY_ID": credentials.access_key,
                    "AWS_SECRET_ACCESS_KEY": credentials.secret_key,
                    "AWS_SESSION_TOKEN": credentials.token or "",
                },
            ),
        }
        for side, (client, home, regions, keys) in sides.items():
            # As CloudFormation tags the table it creates: how the uninstall finds it once the stack is gone.
            dynamodb = client("dynamodb", home)
            arn = dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
            dynamodb.tag_resource(
                ResourceArn=arn,
                Tags=[
                    {"Key": "aws:cloudformation:stack-name", "Value": "costguard"},
                    {"Key": "aws:cloudformation:logical-id", "Value": "StateTable"},
                ],
            )
            env = {**base, **keys, "AWS_DEFAULT_REGION": home}
            found: dict[str, Any] = {"before": left_behind(client, regions, table, home), "runs": {}}
            for name, arguments in RUNS.items():
                run = uninstall(env, ["--region", home, "--regions", ",".join(regions), *arguments])
                run["left"] = left_behind(client, regions, table, home)
                found["runs"][name] = run
            report["accounts"][side] = found
    finally:
        hub.close()
    (directory / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
