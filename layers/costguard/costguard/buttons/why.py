"""The answer to *Why?*: a decision's trail, as the ledger kept it, in plain words. Pure.

Each step is one rule's mark on the decision (idle/rules/trail.py writes them): the rule, what it left the
decision at, why, and what it went on. The answer lists them in the order they ran, so that "why did it stop
my machine" has one answer, the same one the log line of the decision carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from costguard.slack.blocks import Message, Mrkdwn, context, safe, section

VERDICTS = {
    "warn": "warn its owner",
    "wait": "wait out the warning's grace",
    "stop": "stop it",
    "none": "leave it running",
    "skip": "leave it alone",
    "clear-warning": "withdraw its warning",
    "cancel-stop": "not stop it: it is at work",
    "protect": "protect it from scale-in",
    "unprotect": "let its group scale it in",
}
EVIDENCE = 4  # a step's evidence lines, at most: the rest is in the ledger and the log


def why_message(instance_id: str, kind: str, trail: Sequence[Mapping[str, Any]]) -> Message:
    """The thread reply: each rule that changed the decision, in order, with its evidence."""
    what = {"stop": "stopped", "warn": "warned about", "cancel-stop": "did not stop", "clear-warning": "withdrew"}
    header = f"Why costguard {what.get(kind, 'decided about')} `{safe(instance_id)}`:"
    lines = [Mrkdwn(header)]
    for number, step in enumerate(trail, start=1):
        rule = safe(str(step.get("rule", "")))
        verdict = VERDICTS.get(str(step.get("verdict", "")), safe(str(step.get("verdict", ""))))
        lines.append(Mrkdwn(f"{number}. *{rule}* → {verdict}: {safe(str(step.get('why', '')))}"))
        evidence = [safe(str(e)) for e in (step.get("evidence") or [])][:EVIDENCE]
        lines += [Mrkdwn(f"      · {e}") for e in evidence]
    if not trail:
        lines.append(Mrkdwn("costguard kept no trail for this decision (it was made before trails were kept)."))
    text = "\n".join(lines)
    blocks = (section(Mrkdwn(text[:2900])), context(Mrkdwn("The same steps are in costguard's log and ledger.")))
    return Message(text[:3000], blocks)


def unknown(instance_id: str) -> str:
    return f"costguard finds no record of that decision about `{safe(instance_id)}`: it may have expired."
