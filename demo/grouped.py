"""Quinn's three idle machines: one warning with a part for each, a Keep pressed on the second that
changes the second's part only, and one stop notice for the two that stayed idle. costguard sends one
message per recipient per sweep; each machine keeps its own record, buttons and ledger entry."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from demo import fleet
from testing import launches, moto_fixes

OWNER, USER = "quinn@example.com", "U0QUINN"
NAMES = ("quinn-a", "quinn-b", "quinn-c")
TYPE = "g5.xlarge"


def seed(clients: Callable[..., Any], users: dict[str, str], now: datetime) -> list[str]:
    """Three g5.xlarge of quinn's, up for six hours, idle for the last four (CPU, busiest core, GPU)."""
    users[OWNER] = USER
    ec2 = clients("ec2", fleet.HOME)
    ids = []
    for name in NAMES:
        tags = [{"Key": "Name", "Value": name}, {"Key": "Owner", "Value": OWNER}]
        launched = ec2.run_instances(
            ImageId=launches.AMI,
            MinCount=1,
            MaxCount=1,
            InstanceType=TYPE,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )
        iid = str(launched["Instances"][0]["InstanceId"])
        moto_fixes.set_launch_time(iid, fleet.HOME, now - timedelta(hours=6))
        ids.append(iid)
    gpu, arch, count = fleet.GPUS[TYPE]
    ec2_series: list[dict[str, Any]] = []
    agent: list[dict[str, Any]] = []
    for k in range(48, 0, -1):
        at = now - timedelta(minutes=5 * k)
        for iid in ids:
            by_instance = [{"Name": "InstanceId", "Value": iid}]
            ec2_series.append(fleet.percent("CPUUtilization", by_instance, at, 1.2))
            agent.append(fleet.percent("cpu_usage_active", by_instance, at, 6.0))
            for index in range(count):
                agent.append(
                    fleet.percent("nvidia_smi_utilization_gpu", fleet.gpu_dims(iid, index, gpu, arch), at, 0.4)
                )
    cloudwatch = clients("cloudwatch", fleet.HOME)
    for namespace, data in (("AWS/EC2", ec2_series), ("CWAgent", agent)):
        for start in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 500])
    return ids


def keep_the_second(press: Callable[..., object], ids: list[str]) -> None:
    """Quinn keeps the second machine from the grouped warning: only its part of the message changes."""
    press(ids[1], "costguard.keep_2h", USER, "quinn")


def control(blocks: list[dict[str, Any]], instance_id: str, button: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What Slack sends when `button` is pressed for this machine in this message: the button of its own
    actions block, or the option of its line's menu (a line among many in the alerts channel). The action
    and the machine it names."""
    for block in blocks:
        if block.get("type") == "actions" and instance_id in json.dumps(block):
            element = next((e for e in block["elements"] if e.get("action_id") == button), None)
            if element is not None:
                value = element["value"]
                action = {"type": "button", "action_id": button, "block_id": block["block_id"], "value": value}
                return action, json.loads(value)
            for more in (e for e in block["elements"] if e.get("type") == "overflow"):  # the row's "…" menu
                option = next((o for o in more["options"] if json.loads(o["value"])["b"] == button), None)
                if option is not None:
                    action = {"type": "overflow", "action_id": more["action_id"], "selected_option": option}
                    return {**action, "block_id": block["block_id"]}, json.loads(option["value"])
        accessory = block.get("accessory") or {}
        if instance_id in json.dumps(accessory) and accessory.get("type") in ("overflow", "static_select"):
            option = next((o for o in accessory["options"] if json.loads(o["value"])["b"] == button), None)
            if option is not None:
                kind = accessory["type"]
                action = {"type": kind, "action_id": accessory["action_id"], "selected_option": option}
                if block.get("block_id"):
                    action["block_id"] = block["block_id"]
                return action, json.loads(option["value"])
        if instance_id in json.dumps(accessory) and accessory.get("action_id") == button:
            return {"type": "button", **accessory}, json.loads(accessory["value"])
    raise LookupError(f"no {button} for {instance_id} in the message")
