"""What a click on a costguard button does: keep, snooze or stop a machine from the warning itself.

The HTTP side (verify the signature, queue the click, answer Slack within 3 s) is in the handler; this
is the work done from the queue: who may act, what the button does, once, and the message it came from
changed in place to say what is true now (its header, its status, the buttons that still mean something).
The change comes after the effect and its record: a message that cannot be changed never undoes a keep or
a stop. A keep until "tomorrow 09:00" or "Monday" is read on the owner's own clock (their Slack time zone,
else the team's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from botocore.exceptions import ClientError

from costguard.aws.clients import error_code
from costguard.aws.ec2 import Ec2
from costguard.buttons import why as why_words
from costguard.buttons import words
from costguard.buttons.rules import keep_until
from costguard.buttons.words import Done
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.keeping import kept_for_runs, starts_declined
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.core.settings import Mode
from costguard.slack.blocks import Block, Message, Mrkdwn, actions, context, safe, section
from costguard.slack.buttons import KEEPS, Button
from costguard.slack.interactions import Click
from costguard.slack.live import Change
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import ClaimHeld, Claims, ClaimState
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger
from costguard.state.live import LiveMessages


@dataclass(frozen=True)
class Reply:
    """What became of a click, as the person who pressed it is told; a done one, what its message now says."""

    status: str  # "done", "refused", "duplicate", "gone", "dry-run"
    text: str
    done: Done | None = None


Responder = Callable[[str, Mapping[str, Any]], None]
# What IAM or EC2 answers a stop costguard may not make: never worth a retry.
REFUSED = {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "OperationNotPermitted"}
STOPS = (Button.STOP_NOW, Button.STOP_NO_START)  # "Stop and don't start it": Stop now without the promised start


KINDS = {
    Button.STOP_NOW: EntryKind.STOP_FROM_SLACK,
    Button.STOP_NO_START: EntryKind.STOP_FROM_SLACK,
    Button.START: EntryKind.START_FROM_SLACK,
    Button.DONT_START: EntryKind.LEARNED_START_OFF,
}


def stop_record(click: Click, now: datetime) -> dict[str, str]:
    """A stop from Slack, on the machine: when and by whom; and the learned start its warning promised."""
    record = {
        tags.STOPPED_AT: formatting.format_time(now),
        tags.STOP_REASON: tags.clip(f"stopped from Slack by {click.user_name}"),
    }
    start_at = formatting.parse_time(click.start_at)
    return record | ({tags.START_AT: click.start_at} if start_at is not None and start_at > now else {})


def dont_start(ec2: Ec2, click: Click) -> tuple[bool, Done]:
    """ "Skip the planned start": learned starts off for the machine (the tag its owner could set too), and a
    pending start-at gone. Applied, and what the message says."""
    applied = ec2.create_tags([click.instance_id], {tags.LEARNED_START: tags.OFF})
    ec2.delete_tags([click.instance_id], [tags.START_AT])
    return applied, words.no_learned_start(click)


def click_time(click: Click, fallback: datetime) -> datetime:
    """When the button was pressed (Slack's action_ts), so that every delivery of a click records the same."""
    try:
        return datetime.fromtimestamp(float(click.action_ts), UTC)
    except ValueError:
        return fallback


def no_sagemaker(worker: ClickWorker, click: Click, _now: datetime) -> Reply:
    return worker._tell(click, Reply("gone", "costguard does not govern SageMaker in this account."))


@dataclass
class ClickWorker:
    ec2_for: Callable[[str], Ec2]
    notifier: SlackNotifier
    ledger: Ledger
    claims: Claims
    respond: Responder
    accelerated: Callable[[str], bool]  # an EC2 type of the accelerator families costguard governs
    mode: Mode
    owner_tag_key: str
    email_domain: str
    admins: Sequence[str]
    zone: ZoneInfo  # the team's (TeamTimezone): the clock of owners whose own Slack does not say
    account: str = ""  # this worker's account: a click for a machine elsewhere is never acted on here
    sagemaker: Callable[[ClickWorker, Click, datetime], Reply] = no_sagemaker  # clicks on SageMaker resources
    live: LiveMessages | None = None  # the messages kept to change in place (None: the click's response_url)

    def elsewhere(self, click: Click, now: datetime) -> Reply | None:
        """A click this worker does not act on as an EC2 machine's: another account's (refused), a *Why?*
        (anyone may ask: nothing is changed), a SageMaker resource's (buttons.sagemaker)."""
        if click.account and self.account and click.account != self.account:
            logger.error("click for another account", click_account=click.account, account=self.account)
            text = f"`{click.instance_id}` is in account {click.account}; this costguard acts in {self.account} only."
            return self._tell(click, Reply("refused", text))
        if click.button is Button.WHY:
            return self.why(click, now)
        if click.sagemaker:
            return self.sagemaker(self, click, now)
        return None

    def handle(self, click: Click, now: datetime) -> Reply:
        routed = self.elsewhere(click, now)
        if routed is not None:
            return routed
        ec2 = self.ec2_for(click.region)
        found = ec2.describe([click.instance_id])
        if not found or not self.accelerated(found[0].instance_type):
            self.show(click, click.instance_id, words.gone("no longer a GPU machine costguard governs"))
            return self._tell(click, Reply("gone", f"`{click.instance_id}` is not a GPU instance costguard governs."))
        instance = found[0]
        owner = instance.owner(self.owner_tag_key)
        if not self._may_act(click.user_id, owner):
            text = f"Only the owner ({owner or 'unknown'}) or a costguard admin can do that."
            return self._tell(click, Reply("refused", text))
        if click.button is Button.DONT_START and kept_for_runs(instance.tags):  # a message from before the keep
            return self._tell(click, Reply("refused", words.still_kept_for_runs(click)))
        if answered := offer_answered(click, instance.tags):  # an older offer's answer never undoes a newer word
            return self._tell(click, Reply("refused", answered))
        key = f"slack-action:{click.instance_id}:{click.message_ts}:{click.button.value}"
        claim = self.claims.claim(key, now, ttl=timedelta(days=7))
        if claim.state is ClaimState.DONE:
            if claim.detail:  # done, but the attempt may have died before the message showed it: shown again
                done = Done.from_detail(claim.detail)
                self._update_original(click, done)
                return Reply("duplicate", done.text, done)
            return self._tell(click, Reply("duplicate", "That was done already."))
        if claim.state is ClaimState.HELD:
            raise ClaimHeld(f"{key} is being done by another delivery of the click")  # back to the queue
        # Keeps first: the effect (idempotent), then its record (keyed by the click, so a retry writes the
        # same entry), then the done mark, then the answer. A failure anywhere before the done mark
        # leaves the claim to a retry after its lease, which applies the same keep again, harmlessly.
        # The effect is dated now (a keep runs from when it is applied); its record by the click itself.
        if starts_declined(instance.tags):
            click = replace(click, start_at="")  # learned starts turned off since the warning
        zone = self.owner_zone(owner)
        for_runs = kept_for_runs(instance.tags)
        exempt = tags.EXEMPT in instance.tags
        reply = act(ec2, click, instance.hibernation_configured, now, zone, self.mode, for_runs=for_runs, exempt=exempt)
        if reply.status == "done" and click.button not in NO_RECORD:  # a "No", or a word: no keep to record
            at = click_time(click, now)
            self.ledger.record(
                click_entry(click, instance.instance_type, owner, at=at, now=now, mode=self.mode, zone=zone)
            )
        self.claims.done(claim, detail=reply.done.detail() if reply.done is not None else "")
        if reply.done is not None:
            self._update_original(click, reply.done)
        else:
            self._tell(click, reply)
        return reply

    def why(self, click: Click, now: datetime) -> Reply:
        """*Why?*: the decision's trail, from its ledger entry, answered once in the message's thread (to the
        person alone where the message's channel is not known)."""
        at = formatting.parse_time(click.decided)
        entries = self.ledger.decided(click.instance_id, at) if at is not None else []
        with_trail = sorted((e for e in entries if e.trail), key=lambda e: e.kind != EntryKind.STOP)
        if not with_trail:
            return self._tell(click, Reply("gone", why_words.unknown(click.instance_id)))
        entry = with_trail[0]
        message = why_words.why_message(click.instance_id, entry.kind.value, entry.trail)
        if not click.channel:
            return self._tell(click, Reply("done", message.text))
        key = f"slack-why:{click.instance_id}:{click.message_ts}:{click.decided}"
        claim = self.claims.claim(key, now, ttl=timedelta(days=1))
        if claim.state is ClaimState.DONE:  # answered already: once in the thread
            return Reply("duplicate", message.text)
        if claim.state is ClaimState.HELD:
            raise ClaimHeld(f"{key} is being answered by another delivery of the click")  # back to the queue
        try:
            self.notifier.post(click.channel, message, thread_ts=click.message_ts)
        except SlackDeliveryError as exc:  # the thread cannot be answered (a channel gone, the bot not in it)
            self.claims.release(claim)
            logger.warning("why not answered in its thread", instance_id=click.instance_id, error=str(exc)[:200])
            return self._tell(click, Reply("done", message.text))
        except Exception:
            self.claims.release(claim)
            raise
        self.claims.done(claim)
        logger.info("why answered", instance_id=click.instance_id, decided=click.decided, user=click.user_id)
        return Reply("done", message.text)

    def owner_zone(self, owner: str) -> ZoneInfo:
        """The clock an owner reads "tomorrow 09:00" on: their own Slack time zone, else the team's."""
        email = owner_email(owner, self.email_domain) if owner else None
        user = self.notifier.user_id_for(email) if email else None
        return formatting.zone_of(self.notifier.zone_of(user) if user else "", default=self.zone.key)

    def _may_act(self, user_id: str, owner: str) -> bool:
        if user_id in self.admins:
            return True
        for group in (a for a in self.admins if a.startswith("S")):
            if user_id in self.notifier.group_members(group):
                return True
        email = owner_email(owner, self.email_domain) if owner else None
        # A lookup that fails (rate limit, outage) raises: the click goes back to the queue, and the owner
        # is never told "only the owner can do that" because Slack did not answer.
        return bool(email) and self.notifier.user_id_for(email or "", strict=True) == user_id

    def _update_original(self, click: Click, done: Done) -> None:
        """The message the click came from, changed in place: the pressed machine's part says what is true now
        (its status, its buttons), the header follows, every other part stays as it was. A message costguard
        keeps no record of (posted before, or its record lost) is answered through the click's response_url:
        the pressed machine's buttons give way to who did what."""
        key = click.key
        if (
            self.live is not None
            and done.change is not None
            and self.live.change(key, done.change, ts=click.message_ts)
        ):
            logger.info("button click done", instance_id=key, button=click.button.value, user=click.user_id)
            return
        undo = done.after.buttons if done.after is not None else ()  # a stop's Start it again, Don't start it
        said = ":white_check_mark: " + safe(done.text)
        shown = Message(done.text, tuple(answered(click.blocks, click.instance_id, said, buttons=undo)))
        self.respond(click.response_url, shown.response(replace_original=True))
        logger.info("button click done", instance_id=key, button=click.button.value, user=click.user_id)

    def show(self, click: Click, key: str, change: Change) -> None:
        """A machine's part of the message a click came from changed (best effort): gone, for one."""
        if self.live is not None:
            self.live.change(key, change, ts=click.message_ts)

    def _tell(self, click: Click, reply: Reply) -> Reply:
        """An ephemeral answer to the person who clicked; the message stays as it was."""
        answer = Message(reply.text).response(response_type="ephemeral", replace_original=False)
        self.respond(click.response_url, answer)
        logger.info("button click not done", instance_id=click.instance_id, status=reply.status, user=click.user_id)
        return reply


# The offers' answers, and the tag and value each writes (idle/words/offers.py).
OFFER_ANSWERS = {
    Button.FOR_RUNS_NOT_HOOK: (tags.KEEP_FOR_RUNS, tags.IGNORE_HOOK),
    Button.KEEP_HOOK: (tags.KEEP_FOR_RUNS, tags.OFF),
    Button.KEEP_EXEMPT: (tags.KEEP_FOR_RUNS, tags.OFF),
    Button.NOTHING_UNSEEN: (tags.UNSEEN_WORK, tags.NOTHING_UNSEEN),
    Button.KEEP_HOLDING: (tags.UNSEEN_WORK, tags.MAYBE_UNSEEN),
}
OFFER_WORDS = {
    Button.FOR_RUNS_NOT_HOOK: words.hook_replaced,
    Button.KEEP_HOOK: words.hook_kept,
    Button.KEEP_EXEMPT: words.kept_exempt,
    Button.NOTHING_UNSEEN: words.nothing_unseen,
    Button.KEEP_HOLDING: words.keep_holding,
}
NO_RECORD = (Button.KEEP_EXEMPT, Button.KEEP_HOOK, Button.NOTHING_UNSEEN, Button.KEEP_HOLDING)  # keep nothing


def offer_answered(click: Click, resource_tags: Mapping[str, str]) -> str:
    """Why an offer's button is refused: the machine carries another value of the tag it writes since the offer was
    made (a keep for its runs from a warning, its owner's tag, the offer's other answer); "" when it may act (no
    such tag, or the value this answer writes: the same click delivered again)."""
    key, writes = OFFER_ANSWERS.get(click.button, ("", ""))
    now = resource_tags.get(key) if key else None
    if now is None or now.strip().lower() == writes:
        return ""
    return words.offer_answered(click, key, now)


def act(  # noqa: PLR0917
    ec2: Ec2,
    click: Click,
    hibernate: bool,
    now: datetime,
    zone: ZoneInfo,
    mode: Mode,
    *,
    for_runs: bool = False,
    exempt: bool = False,
) -> Reply:
    """What the button does to the machine, and what its message then says (`zone`: the owner's clock;
    `for_runs`: the machine is kept for its runs; `exempt`: it is tagged `costguard:exempt`)."""
    if click.button is Button.KEEP_WHILE_BUSY:
        applied = ec2.create_tags(
            [click.instance_id],
            {tags.KEEP_WHILE_BUSY: formatting.format_time(now), tags.KEPT_BY: tags.clip(click.user_name)},
        )
        ec2.delete_tags([click.instance_id], tags.WARNING_TAGS)
        done = words.kept_while_busy(click, zone.key)
    elif click.button is Button.DONT_START:
        applied, done = dont_start(ec2, click)
    elif click.button is Button.KEEP_FOR_RUNS:
        # Not a keep from the stop: stopped when idle as before, never just before a run, started before each.
        applied = ec2.create_tags([click.instance_id], {tags.KEEP_FOR_RUNS: tags.ON})
        if exempt:  # the offer of a keep that ends: the exemption gives way to it, in the same click
            ec2.delete_tags([click.instance_id], [tags.EXEMPT])
        done = words.exemption_replaced(click) if exempt else words.kept_for_runs(click)
    elif click.button in OFFER_ANSWERS:  # an offer's answer: its word in the machine's tags, said
        # (the hook's "Yes" sets its hook aside; a "No" is the answer that ends the asking, and keeps nothing else)
        key, value = OFFER_ANSWERS[click.button]
        applied, done = ec2.create_tags([click.instance_id], {key: value}), OFFER_WORDS[click.button](click)
    elif click.button in KEEPS:
        until = keep_until(click.button, now, zone)
        applied = ec2.create_tags(
            [click.instance_id],
            {tags.KEEP_UNTIL: formatting.format_time(until), tags.KEPT_BY: tags.clip(click.user_name)},
        )
        ec2.delete_tags([click.instance_id], tags.WARNING_TAGS)
        done = words.kept(click, until, zone.key)
    elif click.button in STOPS:
        return stop(ec2, click, hibernate, now, zone, mode, for_runs=for_runs)
    else:
        try:
            applied = ec2.start(click.instance_id)
        except ClientError as exc:
            code = error_code(exc)
            return Reply("refused", f"AWS would not start it: {code}.")
        done = words.started(click, now, zone.key)
    if not applied:
        return Reply("dry-run", "dry-run: costguard changed nothing. It would have done this: " + done.text)
    return Reply("done", done.text, done)


def stop(  # noqa: PLR0917
    ec2: Ec2, click: Click, hibernate: bool, now: datetime, zone: ZoneInfo, mode: Mode, *, for_runs: bool = False
) -> Reply:
    """Stop now (or Stop anyway): the machine stopped, with the start its warning promised for its runs; "Stop and
    don't start it": stopped, and that start declined (learned starts off for it, as "Skip the planned start")."""
    iid = f"`{click.instance_id}`"
    if click.button is Button.STOP_NO_START:  # its runs' start declined in the same click
        click = replace(click, start_at="")
    if mode is Mode.NOTIFY_ONLY:
        return Reply("refused", "costguard is in notify-only mode and stops nothing; stop it from the console or CLI.")
    try:
        applied = ec2.stop([click.instance_id], hibernate=hibernate)
    except ClientError as exc:
        if error_code(exc) not in REFUSED:
            raise
        return Reply(
            "refused",
            f"AWS refused to stop {iid} ({error_code(exc)}): it is exempt (`{tags.EXEMPT}`) or of a "
            "type costguard may not stop.",
        )
    if applied:
        ec2.create_tags([click.instance_id], stop_record(click, now))
        if click.button is Button.STOP_NO_START:
            dont_start(ec2, click)
    start_at = words.start_again_at(click, now)
    declined = click.button is Button.STOP_NO_START
    done = words.stopped(
        click, now, zone.key, hibernate=hibernate, start_at=start_at, for_runs=for_runs, declined=declined
    )
    if not applied:
        return Reply("dry-run", "dry-run: costguard changed nothing. It would have done this: " + done.text)
    return Reply("done", done.text, done)


def answered(
    blocks: Sequence[Mapping[str, Any]], instance_id: str, done: Mrkdwn, *, buttons: Sequence[Block] = ()
) -> list[Mapping[str, Any]]:
    """The message's blocks with one machine's buttons replaced by what was done: its actions block becomes
    a line saying so, or, a line among many, its menu gives way to it. A message whose blocks name no such
    machine (a notice costguard keeps no record of, one from before) loses all its buttons, and says it at its
    end, followed by the `buttons` that undo what was done (a stop's Start it again, and Don't start it)."""
    out: list[Mapping[str, Any]] = []
    found = False
    for block in blocks:
        if block.get("type") == "actions" and block.get("block_id") == f"costguard:{instance_id}":
            out.append({**context(done), "block_id": block["block_id"]})
            found = True
        elif "accessory" in block and instance_id in json.dumps(block["accessory"]):
            line = str((block.get("text") or {}).get("text", ""))
            out.append({**section(Mrkdwn(f"{line}\n{done}")), "block_id": block.get("block_id", "")})
            found = True
        else:
            out.append(block)
    if not found:
        out = [*(b for b in blocks if b.get("type") != "actions"), context(done)]
        if buttons:
            out.append(actions(f"costguard:{instance_id}", list(buttons)))
    return out


def click_entry(
    click: Click, instance_type: str, owner: str, *, at: datetime, now: datetime, mode: Mode, zone: ZoneInfo
) -> Entry:
    """The ledger's record of a click done: dated by the click itself, so every delivery writes the same."""
    kind = KINDS.get(click.button, EntryKind.KEEP)
    return Entry(
        at=at,
        kind=kind,
        instance_id=click.instance_id,
        region=click.region,
        mode=mode.value,
        owner=owner,
        instance_type=instance_type,
        reason=f"{click.button.value} by {click.user_name}",
        until=formatting.format_time(keep_until(click.button, now, zone)) if click.button in KEEPS else "",
    )
