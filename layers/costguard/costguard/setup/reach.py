"""Why a GPU machine does not answer the activity check, and the one command or setting that fixes it. Pure: what
Systems Manager lists of the machine (its PingStatus, None when it lists nothing), the machine's instance metadata
options, and whether Default Host Management Configuration is on in its region.

For the weekly digest and the first dry-run report (not wired here: their flows read the inputs). A machine
Systems Manager does not list cannot say why itself; what costguard can tell apart from outside is said, the rest
named together with each fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from costguard.core.formatting import plural
from costguard.core.records import Instance
from costguard.slack.blocks import Mrkdwn, mrkdwn

AGENT = "3.2.582"  # the oldest SSM agent Default Host Management Configuration manages
ANY_ID = "<instance-id>"  # a fix's command, for several machines
GROUPS_SHOWN = 3  # reasons listed in a digest: a few lines, the rest counted
IDS_SHOWN = 3
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
    host_management: bool | None,
    check_on: bool = True,
) -> Unanswered | None:
    """None when the machine answers (Systems Manager has it Online); else why not, and its fix.
    `metadata_endpoint`: its MetadataOptions.HttpEndpoint; `host_management`: Default Host Management Configuration
    is on in its region (None: not read); `check_on`: the deployment's ActivityCheck. The words fit one machine or
    several: machines that share a reason and a fix are listed together (`grouped`)."""
    iid = instance.instance_id
    if not check_on:
        return Unanswered(iid, "the activity check is off (ActivityCheck=false)", "ActivityCheck=true")
    if ping == "Online":
        return None
    if ping is not None:
        return Unanswered(
            iid,
            f"the SSM agent stopped reporting ({ping})",
            f"restart the agent (`sudo systemctl restart amazon-ssm-agent`) and check the machine has {ROUTE}",
        )
    if metadata_endpoint == "disabled":
        return Unanswered(
            iid,
            "the instance metadata service is off, so the SSM agent gets no credentials",
            f"`aws ec2 modify-instance-metadata-options --instance-id {iid} --http-endpoint enabled "
            "--http-tokens required`",
        )
    if host_management is False:
        return Unanswered(
            iid,
            "Systems Manager does not manage them (no instance profile, Default Host Management off)",
            "DefaultHostManagement=true, or an instance profile with AmazonSSMManagedInstanceCore",
        )
    if host_management is None:
        return Unanswered(
            iid,
            f"Systems Manager does not list them: no instance profile with AmazonSSMManagedInstanceCore (whether "
            f"Default Host Management Configuration is on was not read), no SSM agent {AGENT} or later, an agent "
            "that reads the instance metadata with IMDSv1 only, or no route to Systems Manager",
            f"DefaultHostManagement=true or an instance profile with AmazonSSMManagedInstanceCore, and an SSM agent "
            f"{AGENT} or later with {ROUTE}",
        )
    return Unanswered(
        iid,
        f"Systems Manager does not list them: no SSM agent {AGENT} or later running, an agent that reads the instance "
        f"metadata with IMDSv1 only, or no route to Systems Manager",
        f"install or update the SSM agent (the AWS-UpdateSSMAgent document, or your AMI's package) and give it {ROUTE}",
    )


@dataclass(frozen=True)
class Group:
    """Machines that share a reason and a fix. A command that names a machine names `<instance-id>` for several."""

    why: str
    fix: str
    instance_ids: tuple[str, ...]


def grouped(found: Iterable[Unanswered]) -> list[Group]:
    """The machines by reason and fix, the largest group first (then by reason, for a stable order)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for u in found:
        groups.setdefault((u.why, u.fix.replace(u.instance_id, ANY_ID)), []).append(u.instance_id)
    out = [
        Group(why, fix if len(ids) > 1 else fix.replace(ANY_ID, ids[0]), tuple(sorted(ids)))
        for (why, fix), ids in groups.items()
    ]
    return sorted(out, key=lambda g: (-len(g.instance_ids), g.why))


def reach_lines(found: Sequence[Unanswered], *, groups_shown: int = GROUPS_SHOWN) -> list[Mrkdwn]:
    """The few lines that say which GPU machines the activity check cannot reach, why, and the fix: a line a
    group ("4 machines judged on metrics alone (`i-…`, … and 1 more): Systems Manager does not manage them: …
    *Fix*: DefaultHostManagement=true …"), at most `groups_shown`, then how many machines the rest hold."""
    groups = grouped(found)
    lines = [
        mrkdwn("{0} judged on metrics alone ({1}): {2}. *Fix*: {3}", _count(g), _ids(g.instance_ids), g.why, g.fix)
        for g in groups[:groups_shown]
    ]
    rest = sum(len(g.instance_ids) for g in groups[groups_shown:])
    if rest:
        lines.append(Mrkdwn(f"and {plural(rest, 'more machine')} the activity check cannot reach, for other reasons"))
    return lines


def _count(group: Group) -> str:
    return plural(len(group.instance_ids), "machine")


def _ids(ids: Sequence[str], shown: int = IDS_SHOWN) -> str:
    """A few ids and how many more there are: a list cut short must not read as whole."""
    named = ", ".join(f"`{i}`" for i in ids[:shown])
    return named + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
