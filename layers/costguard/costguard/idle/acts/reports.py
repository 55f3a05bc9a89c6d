"""What the mode says instead of a warning or a stop: in dry-run, the warning costguard would send; in dry-run and
notify-only, the stop it does not make; each a notice to the alerts channel with its record."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from costguard.core import formatting, tags
from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import marker
from costguard.idle.report import Outcome, ledger_entry
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.words.messages import dry_run_notice, not_stopped_notice
from costguard.slack.blocks import Message
from costguard.state.outbox import NOT_STOPPED, WOULD_WARN, Notice, entry_json


def reported(mode: Mode, decision: Decision) -> bool:
    """Told to the alerts channel instead of done: dry-run's warnings, and stops outside enforce."""
    return (decision.action is Action.WARN and mode is Mode.DRY_RUN) or (
        decision.action is Action.STOP and mode is not Mode.ENFORCE
    )


def report_of(  # noqa: PLR0917 (a report is all of these)
    mode: Mode, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, price: Price
) -> tuple[Notice, Message]:
    """A report to the alerts channel, with its record: in dry-run, the warning costguard would send (once a
    day per machine, with what it would have done in the ledger, not applied: the digest counts none of
    it); in dry-run or notify-only, the stop it does not make (once per warning; nothing done, nothing in
    the ledger). `outcome`: not applied."""
    if decision.action is Action.WARN:
        day = formatting.format_time(now.replace(hour=0, minute=0, second=0, microsecond=0))
        notice = notice_for(mode, WOULD_WARN, instance, day, outcome, now=now)
        return notice, dry_run_notice(instance, decision, price, outcome.owner)
    warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "") or formatting.format_time(now)
    notice = replace(notice_for(mode, NOT_STOPPED, instance, warned_at, outcome, now=now), entry="")
    return notice, not_stopped_notice(instance, decision, mode.value, outcome.owner)


def notice_for(
    mode: Mode, kind: str, instance: Instance, at: str, outcome: Outcome, *, now: datetime, price: Price | None = None
) -> Notice:
    """One machine's notice: its key, the block id that finds it in Slack, the ledger entry it proves."""
    entry = ledger_entry(instance, outcome, now, mode=mode, price=price)
    return Notice(
        kind,
        instance.instance_id,
        at,
        owner=outcome.owner,
        decided=formatting.format_time(now),
        marker=marker(kind, instance.instance_id, at),
        entry=entry_json(entry),
    )
