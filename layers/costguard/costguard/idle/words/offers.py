"""A keep that ends, in the idle stopper's messages: an exemption its owner added right after costguard's stop,
offered back as "Keep it for its runs" (idle/rules/offers.py). Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.core import tags
from costguard.core.records import Instance
from costguard.idle.rules.offers import KeepOffer
from costguard.slack.blocks import Message, Mrkdwn, actions, button, context, header, mrkdwn, section, times_in, when
from costguard.slack.buttons import FOR_RUNS, Button, button_value

KEEP_EXEMPT = "No, keep it exempt"


def keep_offer_notice(instance: Instance, offer: KeepOffer, who: Mrkdwn, now: datetime, *, zone: str) -> Message:
    """The morning after: to the owner, once. The exemption they added when costguard's stop found its run, and
    the keep that would hold the machine for its runs and stop it between them, in one click; or "No"."""
    iid, kind = instance.instance_id, instance.instance_type
    value = button_value(iid, instance.region, instance.account)
    whose = mrkdwn("{}, you", who) if who else Mrkdwn("Its owner")
    return Message(
        f"{kind} {iid} is exempt since costguard stopped it: keep it for its runs instead?",
        (
            header(f"Keep it for its runs instead? {kind}"),
            section(
                whose
                + mrkdwn(" exempted `{}` ({}) after costguard stopped it ", iid, kind)
                + when(offer.stopped_at, zone)
                + Mrkdwn(" and it was started again. costguard now knows its runs: it ")
                + times_in(offer.runs, now)
                + Mrkdwn(
                    ". Kept for its runs, it is held for each run, started before each and stopped when idle "
                    "between them; exempt, it idles between them."
                )
            ),
            context(
                f"One click replaces `{tags.EXEMPT}` with `{tags.KEEP_FOR_RUNS}={tags.ON}`. costguard asks again "
                "on weekday mornings for a week until you answer; once you do, never again."
            ),
            actions(
                f"cg-offer-{iid}"[:255],
                [
                    button(FOR_RUNS, Button.KEEP_FOR_RUNS, value, style="primary"),
                    button(KEEP_EXEMPT, Button.KEEP_EXEMPT, value),
                ],
            ),
        ),
    )
