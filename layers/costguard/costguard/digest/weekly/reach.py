"""The weekly digest's read of the GPU machines the activity check cannot reach, and why (costguard.setup.reach):
what Systems Manager lists of the running machines (DescribeInstanceInformation, as before), their metadata options
(already in their records) and, only where a machine is not listed at all, whether Default Host Management
Configuration is on in its region: one GetServiceSetting a region. A read that fails is a gap the digest says in
its line of what it could not read, never a failed digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.ssm import HOST_MANAGEMENT_SETTING, Ssm, read_setting, setting_arn
from costguard.core.records import Instance
from costguard.setup.reach import Unanswered, unanswered


def read_unanswered(
    regions: Iterable[tuple[str, Ssm | None]], instances: Iterable[Instance], errors: list[str]
) -> list[Unanswered]:
    """The running machines of each region with an SSM reader that Systems Manager does not have Online, each with
    why and its fix, in id order. A region whose listing fails names none (its gap is said)."""
    machines = list(instances)
    found: list[Unanswered] = []
    for name, ssm in regions:
        running = [i for i in machines if i.region == name and i.state == "running"]
        if ssm is None or not running:
            continue
        try:
            pings = ssm.ping_status([i.instance_id for i in running])
        except READ_ERRORS as exc:
            errors.append(f"DescribeInstanceInformation: {error_code(exc)}")
            continue
        unlisted = [i for i in running if i.instance_id not in pings and i.metadata_endpoint != "disabled"]
        on = _host_management(ssm, name, unlisted, errors) if unlisted else None
        for instance in running:
            ping = pings.get(instance.instance_id)
            why = unanswered(instance, ping, metadata_endpoint=instance.metadata_endpoint, host_management=on)
            found += [why] if why else []
    return sorted(found, key=lambda u: u.instance_id)


def _host_management(ssm: Ssm, region: str, machines: Sequence[Instance], errors: list[str]) -> bool | None:
    """Whether Default Host Management Configuration is on in the region (None: not read). The setting is named by
    its ARN, which IAM allows (the machines' account; its bare id where no machine says its account)."""
    account = next((i.account for i in machines if i.account), "")
    arn = setting_arn(ssm.client.meta.partition, region, account) if account else HOST_MANAGEMENT_SETTING
    try:
        return not read_setting(ssm.client, arn).unset
    except READ_ERRORS as exc:
        errors.append(f"GetServiceSetting: {error_code(exc)}")
        return None
