"""Scale-in protection of Auto Scaling members: the busy ones protected, the idle ones released, so that the
group removes idle ones first. costguard never stops a member itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.autoscaling import AutoScaling
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import AWS_ERRORS
from costguard.idle.acts.outbox import Effects, effect_record
from costguard.idle.report import Outcome, Settled, ledger_entry
from costguard.idle.rules.decision import Action
from costguard.state.outbox import PROTECT, UNPROTECT


def scale_in_protection(
    autoscaling: AutoScaling,
    effects: Effects,
    changes: Mapping[tuple[str, bool], Sequence[Instance]],
    *,
    owner_tag_key: str,
    mode: Mode,
    now: datetime,
) -> list[Outcome]:
    """Busy Auto Scaling members protected from scale-in, idle ones released: one call per group and way,
    each member's change kept in the outbox before the call and recorded with its ledger entry after it."""
    out: list[Outcome] = []
    for (group, protect), members in changes.items():
        action = Action.PROTECT if protect else Action.UNPROTECT
        reason = f"{'protected from' if protect else 'released for'} scale-in of {group}"
        outcomes = [
            Outcome(m.instance_id, m.instance_type, m.owner(owner_tag_key), action, reason, mode.mutates)
            for m in members
        ]
        kind = PROTECT if protect else UNPROTECT
        records = [
            effect_record(kind, m, m.launch_time, ledger_entry(m, o, now, mode=mode), now=now, group=group)
            for m, o in zip(members, outcomes, strict=True)
        ]
        try:
            held = effects.before(records, now)
        except AWS_ERRORS as exc:  # no record, no change: the next sweep decides again
            out += [o.settled(Settled.retry(f"outbox: {exc}")) for o in outcomes]
            continue
        try:
            autoscaling.set_protection(group, [m.instance_id for m in members], protect)
        except (ClientError, BotoCoreError) as exc:
            effects.drop(held)
            out += [o.settled(Settled.retry(exc)) for o in outcomes]
            continue
        effects.after(held)
        out += outcomes
    return out
