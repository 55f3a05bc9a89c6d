"""What a click does to the message it came from: the machine's part changed in place to the new state, a keep
"until tomorrow 09:00" read on the owner's own clock (their Slack zone, else the team's) whoever pressed it, a
retried click shown again without a second change, and a message costguard kept no record of answered through
the click's response_url."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from costguard.buttons.worker import ClickWorker, offer_answered
from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.slack.blocks import Message
from costguard.slack.buttons import Button, warning_buttons
from costguard.slack.interactions import Click
from costguard.slack.live import Live, Part, Phase
from costguard.slack.notifier import Delivery
from costguard.state.claims import Claim, ClaimState
from costguard.state.live import LiveMessages
from testing.slack_text import as_read, dates_in
from tests.unit.state.test_live import Table

NOW = datetime(2026, 11, 20, 19, 30, tzinfo=UTC)  # a Friday: 14:30 in New York, 20:30 in Paris
IID = "i-0123456789abcdef0"


class Machines:
    def __init__(self) -> None:
        self.tags: dict[str, str] = {"Owner": "alice@example.com"}

    def describe(self, ids: Any) -> list[Instance]:
        return [Instance(IID, "us-east-1", "g5.xlarge", "running", NOW - timedelta(days=1), tags=dict(self.tags))]

    def create_tags(self, ids: Any, values: dict[str, str]) -> bool:
        self.tags.update(values)
        return True

    def delete_tags(self, ids: Any, keys: Any) -> bool:
        for key in keys:
            self.tags.pop(key, None)
        return True

    def stop(self, ids: Any, *, hibernate: bool) -> bool:
        return True


class People:
    """Slack as the worker sees it: who is who, their zones, the messages it edits."""

    def __init__(self, zones: dict[str, str]) -> None:
        self.zones = zones
        self.shown: list[Message] = []

    def user_id_for(self, email: str, *, strict: bool = False) -> str | None:
        return {"alice@example.com": "U0ALICE"}.get(email)

    def zone_of(self, user_id: str) -> str:
        return self.zones.get(user_id, "")

    def group_members(self, group: str) -> set[str]:
        return set()

    def update(self, channel: str, ts: str, message: Message) -> Delivery:
        self.shown.append(message)
        return Delivery("bot", channel, ts)


class Claims:
    def __init__(self) -> None:
        self.details: dict[str, str] = {}

    def claim(self, key: str, now: datetime, ttl: timedelta) -> Claim:
        if key in self.details:
            return Claim(key, "token", ClaimState.DONE, self.details[key])
        return Claim(key, "token", ClaimState.TAKEN)

    def done(self, claim: Claim, detail: str = "") -> None:
        self.details[claim.key] = detail


class Ledger:
    def __init__(self) -> None:
        self.entries: list[Any] = []

    def record(self, entry: Any) -> None:
        self.entries.append(entry)


def world(zones: dict[str, str], *, kept: bool = True) -> tuple[ClickWorker, People, Machines, Ledger, list[Any]]:
    people, machines, ledger, answers = People(zones), Machines(), Ledger(), []
    table = Table()
    live = LiveMessages(table, "costguard-state", lambda: people)  # type: ignore[arg-type, return-value]
    if kept:
        warned = Part(IID, f"cg-warn-{IID}", "GPU machine", 24.0, "idle", "idle", "Stops soon.")
        buttons = tuple(warning_buttons(IID, "us-east-1", True))
        live.record(
            [(Delivery("bot", "D0ALICE", "1.1"), Live((Part(**{**warned.__dict__, "buttons": buttons}),)))], NOW
        )
    worker = ClickWorker(
        ec2_for=lambda region: machines,  # type: ignore[arg-type, return-value]
        notifier=people,  # type: ignore[arg-type]
        ledger=ledger,  # type: ignore[arg-type]
        claims=Claims(),  # type: ignore[arg-type]
        respond=lambda url, body: answers.append(dict(body)),
        accelerated=IdlePolicy().is_accelerated,
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
        email_domain="example.com",
        admins=["U0ADMIN"],
        zone=ZoneInfo("Europe/Paris"),
        live=live,
    )
    return worker, people, machines, ledger, answers


def click(
    button: Button, user: str = "U0ALICE", *, key: str = IID, ts: str = "1.1", at: datetime = NOW, **details: Any
) -> Click:
    """A press of `button` about `key` on alice's message `ts` by `user` (U0ALICE: alice), as the receiver queues
    it (the block it came from; `details`: what the button's value adds, its start_at, kind, decided...)."""
    original = ({"type": "actions", "block_id": f"costguard:{key}", "elements": []},)
    return Click(
        button,
        key,
        "us-east-1",
        user,
        user.removeprefix("U0").lower(),
        "https://hooks",
        ts,
        str(at.timestamp()),
        original,
        **details,
    )


def test_keep_until_tomorrow_is_nine_in_the_owners_own_zone_and_the_message_says_so_in_place() -> None:
    worker, people, machines, ledger, answers = world({"U0ALICE": "America/New_York"})

    worker.handle(click(Button.KEEP_TOMORROW), NOW)

    until = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)  # Saturday 09:00 in New York
    assert machines.tags[tags.KEEP_UNTIL] == "2026-11-21T14:00:00Z"
    assert ledger.entries[0].until == "2026-11-21T14:00:00Z"
    [shown] = people.shown
    assert shown.blocks[0]["text"]["text"] == "Kept: GPU machine · $24/day"
    assert dates_in(shown.blocks[1]) == [int(until.timestamp())]
    assert "Kept until Sat 21 Nov 09:00 EST by <@U0ALICE>." in as_read(shown.blocks[1])
    assert [b["type"] for b in shown.blocks] == ["header", "section"], "no button is left to press"
    assert answers == [], "changed in place: the click's response_url is not needed"


def test_an_admins_keep_reads_the_owners_clock_and_without_one_the_teams() -> None:
    worker, _, machines, _, _ = world({"U0ALICE": "America/New_York", "U0ADMIN": "Asia/Tokyo"})
    worker.handle(click(Button.KEEP_TOMORROW, user="U0ADMIN"), NOW)
    assert machines.tags[tags.KEEP_UNTIL] == "2026-11-21T14:00:00Z"  # alice's 09:00, not Tokyo's

    worker, _, machines, _, _ = world({})  # her Slack profile says no zone: the team's (Paris)
    worker.handle(click(Button.KEEP_TOMORROW), NOW)
    assert machines.tags[tags.KEEP_UNTIL] == "2026-11-21T08:00:00Z"


def test_a_click_delivered_twice_is_done_once_and_its_message_left_as_the_first_made_it() -> None:
    worker, people, _, ledger, answers = world({})
    first = worker.handle(click(Button.KEEP_2H), NOW)
    again = worker.handle(click(Button.KEEP_2H), NOW + timedelta(seconds=40))
    assert (first.status, again.status) == ("done", "duplicate")
    assert len(ledger.entries) == 1
    assert len(people.shown) == 1, "the message shows it already: not edited again"
    assert answers == []


def test_a_message_costguard_kept_no_record_of_loses_the_pressed_machines_buttons_through_the_response_url() -> None:
    worker, people, _, _, answers = world({}, kept=False)
    worker.handle(click(Button.STOP_NOW), NOW)
    assert people.shown == []
    [answer] = answers
    assert answer["replace_original"] is True
    assert answer["blocks"][0]["type"] == "context"
    assert "stopped" in answer["blocks"][0]["elements"][0]["text"]


def test_stop_now_leaves_start_it_again_and_the_header_says_stopped() -> None:
    worker, people, _, _, _ = world({})
    worker.handle(click(Button.STOP_NOW), NOW)
    [shown] = people.shown
    assert shown.blocks[0]["text"]["text"] == "Stopped: GPU machine · saves $24/day"
    assert [e["action_id"] for e in shown.blocks[2]["elements"]] == [Button.START]
    part = Live.from_json(next(iter(worker.live.client.items.values()))["body"]["S"])  # type: ignore[union-attr]
    assert part.parts[0].phase is Phase.STOPPED


def test_keep_it_for_its_runs_tags_the_machine_records_the_keep_and_says_so_in_place_with_the_stop_still_coming() -> (
    None
):
    worker, people, machines, ledger, answers = world({})
    warned = Part(IID, f"cg-warn-{IID}", "GPU machine", 24.0, "idle", "idle", "costguard stops it at 20:00.")
    buttons = tuple(warning_buttons(IID, "us-east-1", True, start_at="2026-11-21T01:45:00Z", for_runs=True))
    assert worker.live is not None
    worker.live.record(
        [(Delivery("bot", "D0ALICE", "1.1"), Live((Part(**{**warned.__dict__, "buttons": buttons}),)))], NOW
    )
    machines.tags[tags.STOP_AFTER] = "2026-11-20T20:00:00Z"

    reply = worker.handle(click(Button.KEEP_FOR_RUNS), NOW)

    assert reply.status == "done"
    assert machines.tags[tags.KEEP_FOR_RUNS] == "on"
    assert machines.tags[tags.STOP_AFTER] == "2026-11-20T20:00:00Z"  # not a keep from the stop: its warning stands
    [entry] = ledger.entries
    assert (entry.kind.value, entry.reason, entry.until) == ("keep", "costguard.keep_for_runs by alice", "")
    [shown] = people.shown
    assert shown.blocks[0]["text"]["text"] == "Idle GPU machine · $24/day"  # still idle: its stop still comes
    said = as_read(shown.blocks[1])
    assert "costguard stops it at 20:00. Kept for its runs by <@U0ALICE>: started before each." in said
    left = [e["action_id"] for e in shown.blocks[2]["elements"]]
    assert left == [Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_WHILE_BUSY, Button.STOP_NOW]
    assert answers == []


def test_skip_the_planned_start_on_a_machine_kept_for_its_runs_since_is_refused_and_changes_nothing() -> None:
    worker, people, machines, ledger, answers = world({})
    machines.tags[tags.KEEP_FOR_RUNS] = "on"

    reply = worker.handle(click(Button.DONT_START), NOW)

    assert reply.status == "refused"
    assert tags.LEARNED_START not in machines.tags
    assert ledger.entries == []
    assert people.shown == []
    assert "kept for its runs (`costguard:keep-for-runs`)" in answers[0]["text"]


def test_stop_now_on_a_machine_kept_for_its_runs_keeps_the_start_its_warning_promised_despite_starts_off() -> None:
    worker, _, machines, _, _ = world({})
    machines.tags |= {tags.LEARNED_START: "off", tags.KEEP_FOR_RUNS: "on"}
    worker.handle(click(Button.STOP_NOW, start_at="2026-11-21T01:45:00Z"), NOW)

    assert machines.tags[tags.START_AT] == "2026-11-21T01:45:00Z"


def test_stop_now_on_a_machine_kept_for_its_runs_does_not_offer_to_skip_the_start_its_owner_asked_for() -> None:
    worker, people, machines, _, _ = world({})
    machines.tags |= {tags.KEEP_FOR_RUNS: "on"}
    worker.handle(click(Button.STOP_NOW, start_at="2026-11-21T01:45:00Z"), NOW)

    [shown] = people.shown
    assert Button.START.value in str(shown.blocks)  # it can still be started by hand
    assert Button.DONT_START.value not in str(shown.blocks)  # the keep for its runs is its owner's word


def test_an_offers_answer_is_refused_where_the_machine_got_the_other_answer_since_and_not_where_it_is_its_own() -> None:
    said = offer_answered(click(Button.NOTHING_UNSEEN), {tags.UNSEEN_WORK: tags.MAYBE_UNSEEN})
    assert f"is tagged `{tags.UNSEEN_WORK}={tags.MAYBE_UNSEEN}` since this offer was made: that stands" in said
    assert offer_answered(click(Button.KEEP_HOLDING), {tags.UNSEEN_WORK: tags.NOTHING_UNSEEN})
    assert not offer_answered(click(Button.NOTHING_UNSEEN), {tags.UNSEEN_WORK: " None"})  # delivered again
    assert not offer_answered(click(Button.NOTHING_UNSEEN), {tags.KEEP_FOR_RUNS: tags.OFF})  # another offer's tag
    assert offer_answered(click(Button.KEEP_HOOK), {tags.KEEP_FOR_RUNS: tags.ON})
    assert not offer_answered(click(Button.KEEP_2H), {tags.UNSEEN_WORK: tags.MAYBE_UNSEEN})  # not an offer's
