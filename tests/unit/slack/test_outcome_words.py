"""A message's words follow its outcome (issue 46, item 5): each button of each kind of message is pressed through
the click worker, and the whole message as it is edited (every block's text, the header and the notification) is
read: once kept, stopped, started or at work, nothing in it still tells of what no longer holds (a stop "unless you
keep it", a start costguard will not make, "no work for" a machine someone started, a button to keep what is
stopped)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from costguard.buttons.sagemaker import SageMakerClicks
from costguard.buttons.worker import ClickWorker
from costguard.core import tags
from costguard.core.records import Instance, Price
from costguard.core.sagemaker import Resource
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.rules.decision import Action
from costguard.idle.words import messages as idle
from costguard.idle.words.grouping import Part as Notice
from costguard.idle.words.grouping import gather
from costguard.sagemaker.rules.decision import Action as SageMakerAction
from costguard.sagemaker.rules.decision import Decision as SageMakerDecision
from costguard.sagemaker.words import messages as sagemaker_words
from costguard.slack import live
from costguard.slack.blocks import Message
from costguard.slack.buttons import Button
from costguard.slack.live import Live, Part
from costguard.slack.notifier import Delivery
from costguard.state.entries import Entry, EntryKind
from costguard.state.live import LiveMessages
from testing.slack_text import as_read
from tests.unit.buttons.test_worker_messages import Claims, Ledger, People, click
from tests.unit.idle.words.test_keep_for_runs import ALICE, NOW, PRICE, RUNS, START_AT, decided
from tests.unit.sagemaker.resources import notebook_resource
from tests.unit.state.test_live import Table

IID, OTHER = "i-00000000000000001", "i-00000000000000002"
KEEPS = (Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY, Button.KEEP_WHILE_BUSY)
# What must be gone once a button is pressed: (words, labels of buttons that no longer mean anything).
IDLE_WORDS = ("unless you keep", "has done no work", "no work for", "stops each one still idle")
PROMISE = "costguard starts it again"
KEEP_LABELS = ("Keep 2 h", "Keep until", "Keep while it works")
GONE_AFTER: dict[Button, tuple[str, ...]] = {
    **dict.fromkeys(KEEPS, (*IDLE_WORDS, PROMISE, *KEEP_LABELS, "Stop now")),
    Button.STOP_NOW: ("unless you keep", "stops each one still idle", *KEEP_LABELS, "Stop now"),
    Button.STOP_NO_START: ("unless you keep", "stops each one still idle", PROMISE, *KEEP_LABELS, "Skip the planned"),
    Button.DONT_START: (PROMISE, "Skip the planned start", "Stop and don't start it"),
    Button.KEEP_FOR_RUNS: ("Keep it for its runs", "Skip the planned start"),
    Button.START: (*IDLE_WORDS, PROMISE, "Start it again", "Stopped ", "Skip the planned start"),
}
SAID_AFTER = {
    **dict.fromkeys(KEEPS, "Kept "),
    Button.STOP_NOW: "Stopped ",
    Button.STOP_NO_START: "Stopped ",
    Button.DONT_START: "Planned start skipped by <@U0ALICE>",
    Button.KEEP_FOR_RUNS: "Kept for its runs by <@U0ALICE>",
    Button.START: "Started again ",
}


class Machines:
    """EC2 as the worker sees it: one machine of alice's, running or stopped."""

    def __init__(self, state: str = "running") -> None:
        self.state = state
        self.tags: dict[str, str] = {"Owner": "alice@example.com"}

    def describe(self, ids: Any) -> list[Instance]:
        return [
            Instance(i, "us-east-1", "g5.12xlarge", self.state, NOW - timedelta(days=1), tags=dict(self.tags))
            for i in ids
        ]

    def create_tags(self, ids: Any, values: dict[str, str]) -> bool:
        self.tags.update(values)
        return True

    def delete_tags(self, ids: Any, keys: Any) -> bool:
        for key in keys:
            self.tags.pop(key, None)
        return True

    def stop(self, ids: Any, *, hibernate: bool) -> bool:
        self.state = "stopped"
        return True

    def start(self, instance_id: str) -> bool:
        self.state = "running"
        return True


class Threads(People):
    """Slack for a *Why?*: its answers in a message's thread."""

    def __init__(self) -> None:
        super().__init__({})
        self.replies: list[tuple[str, Message, str]] = []

    def post(self, channel: str, message: Message, *, thread_ts: str = "", **_: Any) -> Delivery:
        self.replies.append((channel, message, thread_ts))
        return Delivery("bot", channel, "9.9")


class Decisions(Ledger):
    """The ledger: the entries a click records, and the decision a *Why?* asks about, with its trail."""

    def decided(self, instance_id: str, at: Any) -> list[Entry]:
        trail = ({"rule": "idle verdict", "verdict": "warn", "why": "GPU max 1% < 5% for 3 h", "evidence": {}},)
        return [Entry(at, EntryKind.WARN, instance_id, "us-east-1", "enforce", trail=trail)]


def world(posted: Live, machines: Any, *, sagemaker: Any = None) -> tuple[ClickWorker, Threads]:
    people = Threads()
    messages = LiveMessages(Table(), "costguard-state", lambda: people)  # type: ignore[arg-type, return-value]
    messages.record([(Delivery("bot", "D0ALICE", "1.1"), posted)], NOW)
    worker = ClickWorker(
        ec2_for=lambda region: machines,
        notifier=people,  # type: ignore[arg-type]
        ledger=Decisions(),  # type: ignore[arg-type]
        claims=Claims(),  # type: ignore[arg-type]
        respond=lambda url, body: None,
        accelerated=IdlePolicy().is_accelerated,
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
        email_domain="example.com",
        admins=["U0ADMIN"],
        zone=ZoneInfo("Europe/Paris"),
        live=messages,
        **({"sagemaker": sagemaker} if sagemaker is not None else {}),
    )
    return worker, people


def press(worker: ClickWorker, part: Part, button: Button, *, kind: str = "instance", ts: str = "1.1") -> str:
    [element] = [b for b in part.buttons if b["action_id"] == button]
    target = json.loads(element["value"])
    name = target.get("n") or target["i"]
    at = NOW + timedelta(minutes=5)
    pressed = click(
        button, key=name, ts=ts, at=at, kind=target.get("k", kind), decided=target.get("w", ""), channel="D0ALICE"
    )
    reply = worker.handle(pressed, at)
    assert reply.status == "done", reply.text
    return reply.status


def whole(message: Message) -> str:
    """Everything a reader sees of a message: its notification, every block's text and every button's label."""
    return as_read(message.text) + "\n" + as_read(json.dumps(message.blocks, ensure_ascii=False))


def promised_warning(key: str = IID) -> Part:
    """An idle warning with every button a warning has: its runs known, a start promised after the stop."""
    box = Instance(key, "us-east-1", "g5.12xlarge", "running", NOW - timedelta(hours=6), tags={})
    part = idle.idle_warning(box, decided(Action.WARN, runs=RUNS, start_at=START_AT), PRICE, ALICE, NOW)
    return replace(part, key=key, marker=f"cg-warn-{key}")


def plain_warning(key: str = IID) -> Part:
    """An idle warning with the keeps of a machine whose runs costguard does not know."""
    box = Instance(key, "us-east-1", "g5.12xlarge", "running", NOW - timedelta(hours=6), tags={})
    return replace(idle.idle_warning(box, decided(Action.WARN), PRICE, ALICE, NOW), marker=f"cg-warn-{key}")


def stop_notice(key: str = IID) -> Part:
    box = Instance(key, "us-east-1", "g5.12xlarge", "running", NOW - timedelta(hours=6), tags={})
    part = idle.stopped_part(box, decided(Action.STOP, runs=RUNS, start_at=START_AT), PRICE, ALICE, NOW, zone="UTC")
    return replace(part, marker=f"cg-stop-{key}")


def acting(part: Part) -> list[Button]:
    return [Button(b["action_id"]) for b in part.buttons if b["action_id"] != Button.WHY]


@pytest.mark.parametrize(
    ("made", "button"),
    [(promised_warning, b) for b in acting(promised_warning())]
    + [(plain_warning, b) for b in acting(plain_warning())]
    + [(stop_notice, b) for b in acting(stop_notice())],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_each_button_of_a_machines_own_message_leaves_it_saying_only_what_is_true_now(
    made: Any, button: Button
) -> None:
    part = made()
    machines = Machines("stopped" if part.phase is live.Phase.STOPPED else "running")
    worker, people = world(Live((part,)), machines)

    press(worker, part, button)

    [shown] = people.shown
    said = whole(shown)
    assert SAID_AFTER[button] in said
    stale = [words for words in GONE_AFTER[button] if words in said]
    assert not stale, f"after {button.value}, still said: {stale}\n{said}"


@pytest.mark.parametrize("button", [*KEEPS, Button.STOP_NOW])
def test_each_choice_in_a_grouped_warning_leaves_its_line_and_the_lead_saying_only_what_is_true_now(
    button: Button,
) -> None:
    parts = [plain_warning(IID), plain_warning(OTHER)]
    [gathered] = gather([Notice(Live((p,)).message(), p.marker, "warn", p, ALICE) for p in parts])
    assert gathered.live is not None
    worker, people = world(gathered.live, Machines())

    press(worker, parts[0], button)
    [pressed] = [b for b in people.shown[-1].blocks if b.get("block_id") == parts[0].marker]
    assert [w for w in GONE_AFTER[button] if w in as_read(json.dumps(pressed))] == []
    assert "stops each one still idle" in whole(people.shown[-1])  # the lead, true while one line is still idle
    press(worker, parts[1], button)

    said = whole(people.shown[-1])
    assert SAID_AFTER[button] in said
    stale = [words for words in GONE_AFTER[button] if words in said]
    assert not stale, f"after {button.value} on both, still said: {stale}\n{said}"


def test_the_machine_at_work_after_its_warning_is_not_said_to_have_done_no_work() -> None:
    part = plain_warning()
    decision = replace(decided(Action.CANCEL_STOP), activity="someone typed at 14:03 UTC")
    after = live.settled(idle.cancelled(decision, NOW), part)
    said = whole(Live((after,)).message())
    assert "at work after all" in said
    assert [w for w in (*IDLE_WORDS, *KEEP_LABELS, "Stop now") if w in said] == []


def test_why_answers_in_the_thread_and_leaves_the_message_as_it_was() -> None:
    part = promised_warning()
    worker, people = world(Live((part,)), Machines())

    press(worker, part, Button.WHY)

    assert people.shown == []  # nothing happened to the machine: its message stays as it was
    [(channel, answer, thread)] = people.replies
    assert (channel, thread) == ("D0ALICE", "1.1")
    assert "*idle verdict* → warn its owner: GPU max 1%" in whole(answer)


class Notebooks:
    """SageMaker as the worker sees it: one notebook instance of alice's."""

    def __init__(self, status: str = "InService") -> None:
        self.status = status
        self.tags: dict[str, str] = {"Owner": "alice@example.com"}

    def resource(self, kind: Any, name: str) -> Resource:
        return notebook_resource(status=self.status, tags=dict(self.tags))

    def add_tags(self, arn: str, values: dict[str, str]) -> bool:
        self.tags.update(values)
        return True

    def delete_tags(self, arn: str, keys: Any) -> bool:
        return True

    def start_notebook(self, name: str) -> bool:
        self.status = "Pending"
        return True

    def stop_notebook(self, name: str) -> bool:
        self.status = "Stopping"
        return True


def notebook_warning() -> Part:
    resource = notebook_resource()
    decision = SageMakerDecision(resource.key, SageMakerAction.WARN, "no kernel busy for 3 h", NOW + timedelta(hours=1))
    part = sagemaker_words.warning(resource, decision, Price(1.41, "pricing-api"), ALICE, NOW)
    return replace(part, marker="cg-warn-notebook")


@pytest.mark.parametrize("button", [Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY, Button.STOP_NOW])
def test_each_button_of_a_notebook_warning_leaves_it_saying_only_what_is_true_now(button: Button) -> None:
    part = notebook_warning()
    api = Notebooks()
    clicks = SageMakerClicks(sagemaker_for=lambda region: api, accelerated=lambda kind: True)  # type: ignore[arg-type, return-value]
    worker, people = world(Live((part,)), Machines(), sagemaker=clicks)

    press(worker, part, button, kind="notebook")

    [shown] = people.shown
    said = whole(shown)
    assert ("Stopped " if button is Button.STOP_NOW else "Kept ") in said
    assert [w for w in ("unless you keep", *KEEP_LABELS, "Stop now") if w in said] == []
    if button is Button.STOP_NOW:  # stopped as the sweep stops it: its record, and what undoes it
        assert api.tags[tags.STOP_REASON] == "stopped from Slack by alice"
        assert tags.STOPPED_AT in api.tags
        assert "Start it again" in said
    else:
        assert "has done no work" not in said


def test_start_it_again_on_a_stopped_notebook_leaves_its_message_saying_it_started() -> None:
    resource = notebook_resource()
    decision = SageMakerDecision(resource.key, SageMakerAction.ACT, "no kernel busy for 4 h")
    part = sagemaker_words.act_notice(resource, decision, Price(1.41, "pricing-api"), ALICE, NOW)
    part = replace(part, marker="cg-act-notebook")
    api = Notebooks("Stopped")
    clicks = SageMakerClicks(sagemaker_for=lambda region: api, accelerated=lambda kind: True)  # type: ignore[arg-type, return-value]
    worker, people = world(Live((part,)), Machines(), sagemaker=clicks)

    press(worker, part, Button.START, kind="notebook")

    said = whole(people.shown[-1])
    assert "Started again " in said
    assert [w for w in ("Stopped ", "Start it again", "was still idle") if w in said] == []
