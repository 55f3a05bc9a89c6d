"""Where moto differs from AWS in a way that would hide or fake costguard's behaviour, corrected here.

- EC2 filters: AWS accepts * and ? wildcards in filter values (`instance-type=p*`); moto matches
  them literally and returns nothing. Patched to match like AWS.
- Launch times: moto launches every instance "now"; tests and the demo need machines that have
  been running for hours. `set_launch_time` moves one back.

Used by the integration tests (in-process moto) and the demo (moto's server runs in this process).
"""

from __future__ import annotations

import fnmatch
from datetime import UTC, datetime
from typing import Any

import moto.ec2.utils as ec2_utils
from moto.ec2.models import ec2_backends

ACCOUNT = "123456789012"  # moto's default account


def apply() -> None:
    if getattr(ec2_utils, "_costguard_wildcards", False):
        return
    original = ec2_utils.instance_value_in_filter_values

    def with_wildcards(instance_value: Any, filter_values: Any) -> bool:
        if isinstance(instance_value, str) and any("*" in f or "?" in f for f in filter_values):
            return any(fnmatch.fnmatchcase(instance_value, f) for f in filter_values)
        return bool(original(instance_value, filter_values))

    ec2_utils.instance_value_in_filter_values = with_wildcards
    ec2_utils._costguard_wildcards = True  # type: ignore[attr-defined]


def set_launch_time(instance_id: str, region: str, when: datetime, account: str = ACCOUNT) -> None:
    instance = ec2_backends[account][region].get_instance(instance_id)
    instance.launch_time = when.astimezone(UTC).replace(tzinfo=None)
