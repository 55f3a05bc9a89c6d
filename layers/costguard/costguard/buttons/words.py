"""What a click did, as the message it came from says it now. Pure: the click, what was done, and the clock.

Each done click is two things: a sentence for the person who pressed (a reply only they see when nothing could
change in place) and the change of the machine's part of the message (slack/live.py): its status, its phase
and the buttons that still mean something. Every time is Slack's own: each reader sees their own zone; `zone`
(the owner's, else the team's) is the fallback's, and the clock a keep until "tomorrow 09:00" was read on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from costguard.core import formatting, tags
from costguard.slack import live
from costguard.slack.blocks import NOTHING, Block, Mrkdwn, mention, mrkdwn, when
from costguard.slack.buttons import Button, start_buttons
from costguard.slack.interactions import Click
from costguard.slack.live import Part, Phase


@dataclass(frozen=True)
class Done:
    """A click done: what the person is told, and the change of its machine's part (None: nothing to show)."""

    text: Mrkdwn
    change: live.Change | None = None
    after: Part | None = None  # the change as a part's new state (kept with the claim, for a retry to show)

    def detail(self) -> str:
        """What a later delivery of the click needs to show it again: its text, and the part as it became."""
        if self.after is None:
            return str(self.text)
        state = {k: getattr(self.after, k) for k in ("status", "phase", "word", "buttons", "promise")}
        return json.dumps({"text": str(self.text), "now": state}, separators=(",", ":"))

    @classmethod
    def from_detail(cls, detail: str) -> Done:
        """A done click read back from its claim (plain text from before: its text alone)."""
        try:
            data = json.loads(detail)
        except ValueError:
            return cls(Mrkdwn(detail))
        if not isinstance(data, dict) or "now" not in data:
            return cls(Mrkdwn(detail))
        now = data["now"]
        buttons = tuple(now.get("buttons") or ())
        change = _to(Mrkdwn(now["status"]), Phase(now["phase"]), str(now["word"]), buttons, str(now.get("promise", "")))
        return cls(Mrkdwn(str(data.get("text", ""))), change)


def _to(status: Mrkdwn, phase: Phase, word: str, buttons: tuple[Block, ...], promise: str = "") -> live.Change:
    return lambda part: part.now(status, phase, word, buttons, promise)


def with_after(text: Mrkdwn, change: live.Change) -> Done:
    """A done click, its change also kept as the state it leaves (applied to an empty part)."""
    return Done(text, change, change(Part("", "", "", None, "", "", "")))


def kept(click: Click, until: datetime, zone: str) -> Done:
    who = mention(click.user_id)
    text = mrkdwn("{} kept `{}` until ", who, click.instance_id) + when(until, zone) + Mrkdwn(".")
    return with_after(text, live.kept(until, who, zone))


def kept_while_busy(click: Click, zone: str) -> Done:
    who = mention(click.user_id)
    text = mrkdwn(
        "{} kept `{}` while it works: costguard looks again after a whole idle window.", who, click.instance_id
    )
    return with_after(text, live.kept(None, who, zone))


def stopped(
    click: Click,
    now: datetime,
    zone: str,
    *,
    hibernate: bool,
    start_at: datetime | None,
    for_runs: bool = False,
    declined: bool = False,
) -> Done:
    """Stopped from Slack: its disks (or memory) kept, the start costguard promised, and Start it again; "Skip
    the planned start" too, unless its owner keeps it for its runs (`for_runs`: their word, a start they asked).
    `declined`: "Stop and don't start it", its runs' start turned off in the same click, and said."""
    who = mention(click.user_id)
    word = "Hibernated" if hibernate else "Stopped"
    note = Mrkdwn("Its memory is kept." if hibernate else "Its disks are kept.")
    promise = NOTHING
    if start_at is not None:
        promise = Mrkdwn("costguard starts it again *") + when(start_at, zone) + Mrkdwn("* for its recurring work.")
    elif declined:
        note += Mrkdwn(f" costguard will not start it for its runs (`{tags.LEARNED_START}={tags.OFF}`).")
    skippable = start_at is not None and not for_runs
    buttons = start_buttons(click.instance_id, click.region, click.account, learned_start=skippable)
    text = (
        mrkdwn("{} {} `{}`. ", who, word.lower(), click.instance_id)
        + note
        + (Mrkdwn(" ") + promise if promise else NOTHING)
    )
    return with_after(text, live.stopped(now, who, zone, word=word, note=note, buttons=buttons, promise=promise))


def acted_now(click: Click, now: datetime, zone: str, stopped: bool, undo: list[Block]) -> Done:
    """A SageMaker resource stopped (a notebook instance) or deleted (an endpoint, a Studio app) from its warning,
    and what undoes it (Start it again, Recreate; a Studio app is opened again from Studio)."""
    who = mention(click.user_id)
    word = "Stopped" if stopped else "Deleted"
    text = mrkdwn("{} {} `{}`.", who, word.lower(), click.instance_id)
    return with_after(text, live.stopped(now, who, zone, word=word, buttons=undo))


def started(click: Click, now: datetime, zone: str, *, word: str = "Started again", what: Mrkdwn = NOTHING) -> Done:
    who = mention(click.user_id)
    text = mrkdwn("{} {} `{}`.", who, word[:1].lower() + word[1:], click.instance_id)
    if what:
        text += Mrkdwn(" ") + what
    return with_after(text, live.running(now, who, zone, word=word, note=what))


def no_learned_start(click: Click) -> Done:
    """ "Skip the planned start": learned starts off for the machine; its button gone, and the status says so."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} turned learned starts off for `{}`: costguard will not start it for its recurring work (`{}`).",
        who,
        click.instance_id,
        f"{tags.LEARNED_START}={tags.OFF}",
    )
    skipped = live.without(Button.DONT_START, mrkdwn("Planned start skipped by {}.", who))
    # The start it skips is no longer promised: its words go first, then the choice is said.
    return Done(text, lambda part: _no_stop_without_start(skipped(part.unpromised())))


def kept_for_runs(click: Click) -> Done:
    """ "Keep it for its runs": its part keeps its state (a warning's stop still comes) and says who kept it so;
    that button and "Skip the planned start" gone (the keep outranks it)."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} kept `{}` for its runs (`{}`): costguard stops it when idle, never just before a run it knows of, "
        "and starts it before each.",
        who,
        click.instance_id,
        f"{tags.KEEP_FOR_RUNS}={tags.ON}",
    )
    kept = live.without(Button.KEEP_FOR_RUNS, mrkdwn("Kept for its runs by {}: started before each.", who))
    return Done(text, lambda part: _no_stop_without_start(live.without(Button.DONT_START)(live.settled(kept, part))))


def _no_stop_without_start(part: Part | None) -> Part | None:
    """ "Stop and don't start it" gone with the planned start it declines: skipped, or outranked by a keep for runs
    (Stop now then promises nothing, or what its owner asked)."""
    return live.without(Button.STOP_NO_START)(part) if part is not None else None


def still_kept_for_runs(click: Click) -> str:
    """ "Skip the planned start" on a machine kept for its runs since: the keep stands until its tag is taken off."""
    return (
        f"`{click.instance_id}` is kept for its runs (`{tags.KEEP_FOR_RUNS}`): costguard starts it before them. "
        "Take that tag off first to skip its starts."
    )


def exemption_replaced(click: Click) -> Done:
    """ "Keep it for its runs" on the offer of a keep that ends: the exemption replaced by the keep, and said."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} kept `{}` for its runs in place of its exemption (`{}` removed, `{}`): costguard stops it when idle "
        "between its runs, never just before one, and starts it before each.",
        who,
        click.instance_id,
        tags.EXEMPT,
        f"{tags.KEEP_FOR_RUNS}={tags.ON}",
    )
    return with_after(text, live.without(Button.KEEP_FOR_RUNS, mrkdwn("Kept for its runs by {}.", who)))


def kept_exempt(click: Click) -> Done:
    """ "No, keep it exempt": exempt as it was, the answer in its tags, and costguard does not ask again."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} kept `{}` exempt (`{}`: their answer): costguard leaves it alone and will not ask again.",
        who,
        click.instance_id,
        f"{tags.KEEP_FOR_RUNS}={tags.OFF}",
    )
    return with_after(text, live.without(Button.KEEP_EXEMPT, mrkdwn("Kept exempt by {}.", who)))


def hook_replaced(click: Click) -> Done:
    """ "Keep it for its runs" on the offer about a keep-alive hook: the keep in the hook's place, and said."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} kept `{}` for its runs in place of its keep-alive hook (`{}`): costguard stops it when idle between its "
        "runs, never just before one, and starts it before each; its hook no longer keeps it. Take the tag off to "
        "let the hook keep it again.",
        who,
        click.instance_id,
        f"{tags.KEEP_FOR_RUNS}={tags.IGNORE_HOOK}",
    )
    return with_after(text, live.without(Button.FOR_RUNS_NOT_HOOK, mrkdwn("Kept for its runs by {}.", who)))


def hook_kept(click: Click) -> Done:
    """ "No, its hook decides": kept by its hook as it was, the answer in its tags, and costguard does not ask again."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} left `{}` to its keep-alive hook (`{}`: their answer): costguard does not stop it while the hook says "
        "keep, and will not ask again.",
        who,
        click.instance_id,
        f"{tags.KEEP_FOR_RUNS}={tags.OFF}",
    )
    return with_after(text, live.without(Button.KEEP_HOOK, mrkdwn("Left to its hook by {}.", who)))


def nothing_unseen(click: Click) -> Done:
    """ "Nothing runs unseen" on the offer about a machine costguard cannot look inside: its owner's word, and said."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} says nothing runs on `{}` unless a person starts it (`{}`): costguard stops it when idle, after a "
        "warning, as the others (without GPU metrics, judged by its CPU, outside its owner's working "
        "day). Take the tag off to have it held again.",
        who,
        click.instance_id,
        f"{tags.UNSEEN_WORK}={tags.NOTHING_UNSEEN}",
    )
    return with_after(text, live.without(Button.NOTHING_UNSEEN, mrkdwn("Stopped when idle, on the word of {}.", who)))


def keep_holding(click: Click) -> Done:
    """ "No, keep holding it": held as it was where costguard cannot see, the answer in its tags, not asked again."""
    who = mention(click.user_id)
    text = mrkdwn(
        "{} keeps `{}` held where costguard cannot see (`{}`: their answer): costguard will not ask again.",
        who,
        click.instance_id,
        f"{tags.UNSEEN_WORK}={tags.MAYBE_UNSEEN}",
    )
    return with_after(text, live.without(Button.KEEP_HOLDING, mrkdwn("Held as it was, said {}.", who)))


def offer_answered(click: Click, key: str, value: str) -> str:
    """An offer's button pressed after the machine got another value of the tag it writes (`key`): that stands."""
    said = value[:60].replace("`", "'")  # the reply is escaped as a whole (slack/blocks.py's Message)
    return (
        f"`{click.instance_id}` is tagged `{key}={said}` since this offer was made: that stands. "
        "Change the tag itself to change it."
    )


def start_again_at(click: Click, now: datetime) -> datetime | None:
    """The learned start a "Stop now" keeps (its warning promised it), if it is still ahead."""
    start_at = formatting.parse_time(click.start_at)
    return start_at if start_at is not None and start_at > now else None


def gone(what: str) -> live.Change:
    return live.gone(None, what, "UTC")
