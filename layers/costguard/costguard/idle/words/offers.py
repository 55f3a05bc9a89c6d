"""A keep that ends, in the idle stopper's messages: an exemption its owner added right after costguard's stop,
offered back as "Keep it for its runs", and a keep-alive hook that holds an idle machine, offered the same in its
place; and a machine held because costguard cannot look inside it, its owner asked for their word
(idle/rules/offers.py). Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.core import tags
from costguard.core.records import Instance
from costguard.idle.rules.automation import LET_IT_SEE
from costguard.idle.rules.offers import HookOffer, KeepOffer, UnseenOffer
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


HOOK_DECIDES = "No, its hook decides"


def hook_offer_notice(instance: Instance, offer: HookOffer, who: Mrkdwn, now: datetime, *, zone: str) -> Message:
    """To the owner, once a weekday until they answer: the keep-alive hook holds the machine while it idles, and
    the keep that would hold it for its runs alone, in one click; or "No"."""
    iid, kind = instance.instance_id, instance.instance_type
    value = button_value(iid, instance.region, instance.account)
    whose = mrkdwn("{}, your", who) if who else Mrkdwn("Its owner's")
    since = Mrkdwn(" since ") + when(offer.idle_since, zone) if offer.idle_since is not None else Mrkdwn("")
    return Message(
        f"{kind} {iid} idles, kept running by its keep-alive hook: keep it for its runs instead?",
        (
            header(f"Keep it for its runs instead of its hook? {kind}"),
            section(
                whose
                + mrkdwn(" keep-alive hook keeps `{}` ({}) running, and nothing else on it has been at work", iid, kind)
                + since
                + (mrkdwn(" (the hook says `{}`)", offer.hook.replace("`", "'")) if offer.hook else Mrkdwn(""))
                + Mrkdwn(". costguard knows its runs: it ")
                + times_in(offer.runs, now)
                + Mrkdwn(
                    ". Kept for its runs instead, it is held for each run, started before each and stopped when idle "
                    "between them: its hook no longer keeps it. Kept by its hook, it idles between them."
                )
            ),
            context(
                f"One click tags it `{tags.KEEP_FOR_RUNS}={tags.IGNORE_HOOK}`; take the tag off to let the hook keep "
                "it again. costguard asks again on weekdays for a week, and for a week each month, until you "
                "answer; once you do, never again."
            ),
            actions(
                f"cg-offer-{iid}"[:255],
                [
                    button(FOR_RUNS, Button.FOR_RUNS_NOT_HOOK, value, style="primary"),
                    button(HOOK_DECIDES, Button.KEEP_HOOK, value),
                ],
            ),
        ),
    )


NOTHING_UNSEEN = "Nothing runs unseen: stop it when idle"
KEEP_HOLDING = "No, keep holding it"


def unseen_offer_notice(instance: Instance, offer: UnseenOffer, who: Mrkdwn, *, zone: str) -> Message:
    """To the owner, once a weekday until they answer: costguard cannot look inside the machine, so it holds it where
    it cannot see (never stopped without GPU metrics; held through weekday nights not watched yet); their word that
    nothing runs on it unless a person starts it lets costguard stop it when idle, in one click; or "No". How to let
    costguard see inside it, too."""
    iid, kind = instance.instance_id, instance.instance_type
    value = button_value(iid, instance.region, instance.account)
    whose = mrkdwn("{}, costguard", who) if who else Mrkdwn("costguard")
    since = Mrkdwn(" It has been idle since ") + when(offer.idle_since, zone) + Mrkdwn(".") if offer.idle_since else ""
    if offer.no_gpu_metrics:
        held = Mrkdwn(
            " It sends no GPU metrics either, so costguard cannot tell a job that uses only its GPUs from an idle "
            "machine: it warns, and never stops it."
        )
        then = (
            " Stopped when idle then means: its CPU quiet for the idle window, a warning with Keep "
            "buttons, and a stop only outside your working day (8 to 18 o'clock on your clock)."
        )
    else:
        held = Mrkdwn(
            " So it keeps it running every weekday night it has not watched yet, in case a job of its own starts "
            "there by waiting (for data, on a queue), which no metric shows."
        )
        then = " Stopped when idle then means: after the idle window and a warning with Keep buttons, as your others."
    return Message(
        f"{kind} {iid}: costguard cannot look inside it. Does anything run on it unless you start it?",
        (
            header(f"Does anything run on it unless you start it? {kind}"),
            section(
                whose
                + mrkdwn(" cannot look inside `{}` ({}): no SSM agent answers its activity check.", iid, kind)
                + held
                + Mrkdwn(since)
                + Mrkdwn(" If nothing runs on it unless you start it yourself, say so, and it is stopped when idle.")
                + Mrkdwn(then)
            ),
            context(
                f"One click tags it `{tags.UNSEEN_WORK}={tags.NOTHING_UNSEEN}`; take the tag off to have it held "
                f"again. Better still, let costguard see inside it: {LET_IT_SEE}. costguard asks again on weekdays "
                "for a week, and for a week each month, until you answer; once you do, never again."
            ),
            actions(
                f"cg-offer-{iid}"[:255],
                [
                    button(NOTHING_UNSEEN, Button.NOTHING_UNSEEN, value, style="primary"),
                    button(KEEP_HOLDING, Button.KEEP_HOLDING, value),
                ],
            ),
        ),
    )
