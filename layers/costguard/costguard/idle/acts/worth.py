"""What the machines costguard keeps stopped save now, kept once per sweep for the weekly digest (the bill's price
of each hour off): a write for the digest alone, which never costs the region its sweep. The spill the sweep's
bill found is kept then too, in the region's profile by quarter-hour of the week (for the stops to come)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from costguard.aws.ec2 import Ec2
from costguard.core.bill import SpillProfile
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.reads.bill import SweepBill, kept_stopped
from costguard.state.worth import Worth, WorthLog


def reprice_stopped(
    ec2: Ec2,
    policy: IdlePolicy,
    log: WorthLog,
    bill: SweepBill,
    now: datetime,
    *,
    read: Callable[[], Sequence[Instance]] | None = None,
) -> None:
    """What the machines costguard keeps stopped save now, on the bill the sweep read (or reads now), for
    the digest: kept once per sweep; a failed read or write is logged and the stops' own prices stand. `read`:
    the sweep's read of them (made once, when a profile priced its stops), else they are read here."""
    stopped: Sequence[Instance] | None = None
    try:
        stopped = read() if read is not None else kept_stopped(ec2, policy)
        log.record(Worth(now, ec2.region, bill.worth(stopped)))
    except Exception as exc:  # for the digest alone: it must never cost the region its sweep
        logger.warning("stopped machines not priced again", region=ec2.region, error=str(exc)[:200])
    keep_spill(bill, now, stopped)


def keep_spill(bill: SweepBill, now: datetime, stopped: Sequence[Instance] | None = ()) -> None:
    """The spill the sweep's bill found now, kept in the region's profile for the stops to come: gross of the
    machines costguard keeps `stopped` (None: they could not be read, and nothing is kept: a spill net of them
    would have them take their share twice). For the stops to come alone: a failure is logged and never costs
    the sweep."""
    if bill.profile is None:
        return
    if stopped is None:
        logger.warning("spill profile not kept: the stopped machines not read", region=bill.region)
        return
    try:
        spill = bill.spill_found(stopped)
        if not spill:
            return
        week = bill.week()
        if bill.week_unread:  # a week of quarter-hours must not be written over with this one alone
            return
        bill.profile.write((week or SpillProfile(bill.region)).learned(spill, now), now)
    except Exception as exc:  # for the sweeps to come alone
        logger.warning("spill profile not kept", region=bill.region, error=str(exc)[:200])
