"""Why a GPU machine does not answer the activity check, and the one command or setting that fixes it. Pure: what
Systems Manager lists of the machine (its PingStatus, None when it lists nothing), the machine's instance metadata
options, and whether Default Host Management Configuration is on in its region.

For the weekly digest and the first dry-run report (not wired here: their flows read the inputs). A machine
Systems Manager does not list cannot say why itself; what costguard can tell apart from outside is said, the rest
named together with each fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from costguard.core.records import Instance

AGENT = "3.2.582"  # the oldest SSM agent Default Host Management Configuration manages
ROUTE = "a route to Systems Manager (VPC endpoints ssm, ssmmessages and ec2messages, or a NAT gateway)"


@dataclass(frozen=True)
class Unanswered:
    """A machine the check cannot reach: why, and the fix (a command or a setting)."""

    instance_id: str
    why: str
    fix: str


def unanswered(
    instance: Instance,
    ping: str | None,
    *,
    metadata_endpoint: str = "enabled",
    host_management: bool,
    check_on: bool = True,
) -> Unanswered | None:
    """None when the machine answers (Systems Manager has it Online); else why not, and its fix.
    `metadata_endpoint`: its MetadataOptions.HttpEndpoint; `host_management`: Default Host Management Configuration
    is on in its region; `check_on`: the deployment's ActivityCheck."""
    iid = instance.instance_id
    if not check_on:
        return Unanswered(iid, "the activity check is off (ActivityCheck=false)", "ActivityCheck=true")
    if ping == "Online":
        return None
    if ping is not None:
        return Unanswered(
            iid,
            f"its SSM agent stopped reporting ({ping})",
            f"restart the agent on it (`sudo systemctl restart amazon-ssm-agent`) and check it has {ROUTE}",
        )
    if metadata_endpoint == "disabled":
        return Unanswered(
            iid,
            "its instance metadata service is off, so the SSM agent gets no credentials",
            f"`aws ec2 modify-instance-metadata-options --instance-id {iid} --http-endpoint enabled "
            "--http-tokens required`",
        )
    if not host_management:
        return Unanswered(
            iid,
            "Systems Manager does not manage it: no instance profile with AmazonSSMManagedInstanceCore, and Default "
            "Host Management Configuration is off in its region",
            "DefaultHostManagement=true (costguard's deploy turns it on), or an instance profile with "
            "AmazonSSMManagedInstanceCore",
        )
    return Unanswered(
        iid,
        f"Systems Manager does not list it: no SSM agent {AGENT} or later running, an agent that reads the instance "
        f"metadata with IMDSv1 only, or no route to Systems Manager",
        f"install or update the SSM agent (the AWS-UpdateSSMAgent document, or your AMI's package) and give it {ROUTE}",
    )
