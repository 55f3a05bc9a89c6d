"""What the machines costguard keeps stopped save now, kept once per sweep for the weekly digest (the bill's price
of each hour off): a write for the digest alone, which never costs the region its sweep. The spill the sweep's
bill found is kept then too, in the region's profile by quarter-hour of the week (for the stops to come)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from costguard.aws.ec2 import Ec2
from costguard.core import tags
from costguard.core.bill import SpillProfile
from costguard.core.observability import logger
from costguard.core.settings import IdlePolicy
from costguard.idle.reads.bill import SweepBill
from costguard.idle.rules.restarts import costguards_stop
from costguard.state.worth import Worth, WorthLog


def reprice_stopped(ec2: Ec2, policy: IdlePolicy, log: WorthLog, bill: SweepBill, now: datetime) -> None:
    """What the machines costguard keeps stopped save now, on the bill the sweep read (or reads now), for
    the digest: kept once per sweep; a failed read or write is logged and the stops' own prices stand."""
    try:
        stopped = [
            i
            for i in ec2.iter_instances(stopped_filters(policy))
            if i.state == "stopped" and policy.is_accelerated(i.instance_type) and costguards_stop(i) is not None
        ]
        log.record(Worth(now, ec2.region, bill.worth(stopped)))
    except Exception as exc:  # for the digest alone: it must never cost the region its sweep
        logger.warning("stopped machines not priced again", region=ec2.region, error=str(exc)[:200])
    keep_spill(bill, now)


def keep_spill(bill: SweepBill, now: datetime) -> None:
    """The spill the sweep's bill found now, kept in the region's profile for the stops to come: for them alone,
    a failure is logged and never costs the sweep."""
    if bill.profile is None:
        return
    try:
        spill = bill.spill_found()
        if not spill:
            return
        week = bill.week()
        if bill.week_unread:  # a week of quarter-hours must not be written over with this one alone
            return
        bill.profile.write((week or SpillProfile(bill.region)).learned(spill, now), now)
    except Exception as exc:  # for the sweeps to come alone
        logger.warning("spill profile not kept", region=bill.region, error=str(exc)[:200])


def stopped_filters(policy: IdlePolicy) -> list[Any]:
    """The region's stopped accelerated machines that costguard stopped."""
    return [
        {"Name": "instance-state-name", "Values": ["stopped"]},
        {"Name": "tag-key", "Values": [tags.STOPPED_AT]},
        {"Name": "instance-type", "Values": list(policy.accelerator_families)},
    ]
