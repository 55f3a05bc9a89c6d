"""Live messages kept in the state table and changed in place: one part at a time, on the newest version,
Slack ending on the last change whatever order the edits reach it in; a message that cannot be changed is
said (False, logged), never raised at the stop or keep it tells of."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from costguard.core.errors import SlackDeliveryError
from costguard.slack import live
from costguard.slack.blocks import Message, Mrkdwn, mention
from costguard.slack.live import Live, Part, Phase
from costguard.slack.notifier import Delivery
from costguard.state.live import LiveMessages, older, reshow

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
ALICE = mention("U0ALICE")


class Refused(Exception):
    pass


class Table:
    """The state table's items in memory: GetItem, PutItem (with the version condition), BatchWriteItem. `meanwhile`
    runs before each PutItem (another writer's change, at just the wrong moment)."""

    class exceptions:
        ConditionalCheckFailedException = Refused

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.meanwhile: list[Callable[[], object]] = []

    def get_item(self, Key: dict[str, Any], **_: Any) -> dict[str, Any]:
        item = self.items.get(Key["pk"]["S"])
        return {"Item": item} if item else {}

    def put_item(self, Item: dict[str, Any], **params: Any) -> dict[str, Any]:
        if self.meanwhile:
            self.meanwhile.pop(0)()
        kept = self.items.get(Item["pk"]["S"])
        if "ConditionExpression" in params:
            expected = params["ExpressionAttributeValues"][":v"]["N"]
            if kept is None or kept["version"]["N"] != expected:
                raise Refused
        self.items[Item["pk"]["S"]] = Item
        return {}

    def update_item(self, Key: dict[str, Any], UpdateExpression: str, **params: Any) -> dict[str, Any]:
        """ADD or DELETE members of a string set (the stale messages' mark)."""
        how, name, _ = UpdateExpression.split()
        item = self.items.setdefault(Key["pk"]["S"], {**Key})
        members = set(item.get(name, {}).get("SS", []))
        change = set(params["ExpressionAttributeValues"][":m"]["SS"])
        members = members | change if how == "ADD" else members - change
        if members:
            item[name] = {"SS": sorted(members)}
        else:
            item.pop(name, None)
        return {}

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        [(table, request)] = RequestItems.items()
        found = [self.items[k["pk"]["S"]] for k in request["Keys"] if k["pk"]["S"] in self.items]
        return {"Responses": {table: found}}

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        for request in next(iter(RequestItems.values())):
            item = request["PutRequest"]["Item"]
            self.items[item["pk"]["S"]] = item
        return {}


class Slack:
    """chat.update, recorded (or refused: for good, the message gone; or for now, an outage)."""

    def __init__(self, refuse: bool = False, *, down: bool = False) -> None:
        self.shown: list[Message] = []
        self.refuse, self.down = refuse, down

    def update(self, channel: str, ts: str, message: Message) -> Delivery:
        if self.refuse:
            raise SlackDeliveryError(f"could not edit {ts} in {channel}: 400 message_not_found", lasting=True)
        if self.down:
            raise SlackDeliveryError(f"could not edit {ts} in {channel}: 503 service_unavailable")
        self.shown.append(message)
        return Delivery("bot", channel, ts)


def part(key: str) -> Part:
    return Part(key, f"cg-warn-{key}", "GPU machine", 136.0, f"`{key}` is idle.", f"`{key}`", "It stops at 14:30.")


def kept_by(who: Mrkdwn) -> live.Change:
    return live.kept(NOW, who, "UTC")


def store(table: Table, slack: Slack) -> LiveMessages:
    return LiveMessages(table, "costguard-state", lambda: slack)  # type: ignore[arg-type, return-value]


def posted(messages: LiveMessages, *keys: str) -> None:
    messages.record([(Delivery("bot", "D0ALICE", "1.1"), Live(tuple(part(k) for k in keys)))], NOW)


def test_a_message_kept_then_changed_shows_the_change_and_every_other_part_as_it_was() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1", "i-2")

    assert messages.change("i-2", kept_by(ALICE)) == ("D0ALICE", "1.1")

    [shown] = slack.shown
    assert shown.blocks[0]["text"]["text"] == "1 idle GPU machine · $136/day · 1 kept"
    assert shown.blocks[1]["text"]["text"].endswith("It stops at 14:30.")  # i-1 as it was
    assert "by <@U0ALICE>." in shown.blocks[2]["text"]["text"]
    assert table.items["live#D0ALICE#1.1"]["version"]["N"] == "2"


def test_a_message_the_webhook_posted_is_not_kept_and_nothing_changes() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    messages.record([(Delivery("webhook", "webhook"), Live((part("i-1"),)))], NOW)
    assert table.items == {}
    assert messages.change("i-1", kept_by(ALICE)) is None
    assert slack.shown == []


def test_a_click_on_an_older_message_does_not_change_the_newest() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1")
    assert messages.change("i-1", kept_by(ALICE), ts="0.9") is None  # the click's message is not this one
    assert slack.shown == []


def test_a_change_that_loses_the_race_is_made_again_on_the_newest_so_neither_is_lost() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1", "i-2")
    # The sweep stops i-1 between the click's read and its write.
    table.meanwhile.append(lambda: store(table, Slack()).change("i-1", live.stopped(NOW, None, "UTC")))

    messages.change("i-2", kept_by(ALICE))

    final = Live.from_json(table.items["live#D0ALICE#1.1"]["body"]["S"])
    assert [p.phase for p in final.parts] == [Phase.STOPPED, Phase.KEPT]
    assert slack.shown[-1].blocks[0]["text"]["text"] == "2 GPU machines: 1 kept, 1 stopped"


def test_a_later_change_that_reached_slack_first_is_shown_again_last() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1", "i-2")
    original = messages._show
    later = lambda: store(table, slack).change("i-1", live.stopped(NOW, None, "UTC"))  # noqa: E731

    def slow_show(at: Any, message: Live) -> None:
        later()  # another change is written and shown while this edit is on its way
        original(at, message)

    messages._show = slow_show  # type: ignore[method-assign, assignment]
    messages.change("i-2", kept_by(ALICE))

    headers = [m.blocks[0]["text"]["text"] for m in slack.shown]
    assert headers == [
        "2 GPU machines: 1 kept, 1 stopped",  # the other change, shown first
        "1 idle GPU machine · $136/day · 1 kept",  # this one's edit, late, without it
        "2 GPU machines: 1 kept, 1 stopped",  # and the newest again: Slack ends on the last change
    ]


def test_a_message_slack_will_not_change_is_said_and_left_to_the_next_change() -> None:
    table = Table()
    messages = store(table, Slack(refuse=True))
    posted(messages, "i-1")
    assert messages.change("i-1", kept_by(ALICE)) is None  # logged and counted, never raised


def test_an_edit_slack_did_not_take_is_shown_again_as_the_message_stands_then_and_a_gone_one_is_let_go() -> None:
    table, slack = Table(), Slack(down=True)
    messages = store(table, slack)
    posted(messages, "i-1")
    assert messages.change("i-1", kept_by(ALICE)) is None  # Slack is down: logged, never raised
    [mark] = table.items["live-stale"]["messages"]["SS"]
    assert mark.startswith("D0ALICE#1.1#")  # the message, with its change's own mark
    assert reshow(messages) == 0  # still down: left for the next sweep
    assert "live-stale" in table.items
    assert slack.shown == []

    slack.down = False
    assert reshow(messages) == 1
    [shown] = slack.shown
    assert shown.blocks[0]["text"]["text"] == "Kept: GPU machine · $136/day"  # the change it missed
    assert reshow(messages) == 1  # a mark first found at the previous round: shown once more, then cleared
    assert "messages" not in table.items["live-stale"]  # no longer stale
    assert "seen" not in table.items["live-stale"]
    assert reshow(messages) == 0

    gone = Slack(refuse=True)  # deleted in Slack meanwhile: a refusal for good is not marked, nor kept marked
    table.items["live-stale"]["messages"] = {"SS": ["D0ALICE#1.1"]}
    assert reshow(store(table, gone)) == 0
    assert "messages" not in table.items["live-stale"]
    assert store(table, gone).change("i-1", live.stopped(NOW, Mrkdwn(""), "UTC")) is None
    assert "messages" not in table.items["live-stale"]


class Ended(BaseException):
    """Lambda ending the invocation at its timeout: no except clause of costguard's sees it."""


def test_a_change_whose_invocation_ends_between_its_record_and_its_edit_is_shown_by_the_next_sweep() -> None:
    table, others, ours = Table(), Slack(), Slack()
    posted(store(table, others), "i-1", "i-2")
    # Another invocation's change of the same message, made and shown in full while ours is on its way: it
    # clears its own mark, not ours.
    table.meanwhile.append(lambda: store(table, others).change("i-2", kept_by(ALICE)))

    def ended(channel: str, ts: str, message: Message) -> Delivery:
        raise Ended  # after our record was written, before Slack had the edit

    ours.update = ended  # type: ignore[method-assign]
    with pytest.raises(Ended):
        store(table, ours).change("i-1", live.stopped(NOW, Mrkdwn(""), "UTC"))
    [theirs] = others.shown
    assert theirs.blocks[0]["text"]["text"] == "1 idle GPU machine · $136/day · 1 kept"  # Slack shows no stop
    assert "messages" in table.items["live-stale"]

    later = Slack()
    assert reshow(store(table, later)) == 1

    [shown] = later.shown
    assert shown.blocks[0]["text"]["text"] == "2 GPU machines: 1 kept, 1 stopped"  # both changes
    assert reshow(store(table, later)) == 1  # found at the round before: shown once more, cleared
    assert "messages" not in table.items["live-stale"]


def test_a_sweep_showing_stale_messages_while_a_change_is_on_its_way_does_not_clear_that_changes_mark() -> None:
    table, ours = Table(), Slack()
    posted(store(table, Slack()), "i-1")
    # Another sweep shows the stale messages after our change marked the message, before our record is written:
    # it shows the message as it stands (no stop yet). Our invocation then ends before its edit.
    table.meanwhile.append(lambda: reshow(store(table, Slack())))

    def ended(channel: str, ts: str, message: Message) -> Delivery:
        raise Ended

    ours.update = ended  # type: ignore[method-assign]
    with pytest.raises(Ended):
        store(table, ours).change("i-1", live.stopped(NOW, Mrkdwn(""), "UTC"))
    later = Slack()
    assert reshow(store(table, later)) == 1  # our mark is still there: the next sweep shows the stop
    [shown] = later.shown
    assert shown.blocks[0]["text"]["text"] == "Stopped: GPU machine · saves $136/day"


def test_a_change_made_already_is_not_made_or_shown_again() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1")
    keep = kept_by(ALICE)
    messages.change("i-1", keep)
    assert messages.change("i-1", keep) == ("D0ALICE", "1.1")  # a retry of the same click: done, nothing to show
    assert len(slack.shown) == 1


def test_a_sweeps_changes_to_one_message_are_one_write_and_one_edit() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1", "i-2", "i-3")
    at = ("D0ALICE", "1.1")
    stop = live.stopped(NOW, Mrkdwn(""), "UTC")

    done = messages.change_many([(at, "i-1", stop), (at, "i-3", stop), (at, "i-9", stop)])

    assert done == {"i-1", "i-3"}  # i-9 is not in it
    [shown] = slack.shown
    assert shown.blocks[0]["text"]["text"] == "1 idle GPU machine · $136/day · 2 stopped"
    assert table.items["live#D0ALICE#1.1"]["version"]["N"] == "2"


def throttled() -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, "PutItem")


def test_a_message_whose_batch_is_refused_is_kept_item_by_item_though_one_item_is_throttled_once() -> None:
    """A warning not kept could never be withdrawn in place: when BatchWriteItem is refused (a storm), every item is
    written on its own, and one PutItem that fails is not the end of the others, nor of itself (tried again)."""
    table, slack = Table(), Slack()
    refused = ["live-of#i-1"]  # where i-1's part lives: refused once
    put = table.put_item

    def refused_batch(**_: Any) -> dict[str, Any]:
        raise throttled()

    def put_item(Item: dict[str, Any], **params: Any) -> dict[str, Any]:
        if Item["pk"]["S"] in refused:
            refused.remove(Item["pk"]["S"])
            raise throttled()
        return put(Item, **params)

    table.batch_write_item = refused_batch  # type: ignore[method-assign,assignment]
    table.put_item = put_item  # type: ignore[method-assign]
    messages = store(table, slack)
    posted(messages, "i-1", "i-2")

    assert sorted(table.items) == ["live#D0ALICE#1.1", "live-of#i-1", "live-of#i-2"]
    assert messages.change("i-1", kept_by(ALICE)) == ("D0ALICE", "1.1")


def test_a_message_whose_keep_failed_is_kept_again_and_one_kept_already_is_left_as_it_changed() -> None:
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1")
    messages.change("i-1", kept_by(ALICE))
    messages.record([(Delivery("bot", "D0ALICE", "3.1"), Live((part("i-3"),)))], NOW)  # a later message of i-3

    messages.kept_again(
        [
            (("D0ALICE", "1.1"), Live((part("i-1"),))),
            (("D0ALICE", "2.1"), Live((part("i-2"),))),
            (("D0ALICE", "2.5"), Live((part("i-3"),))),
        ],
        NOW,
    )

    assert table.items["live#D0ALICE#1.1"]["version"]["N"] == "2"  # kept already: as it changed
    assert messages.where(["i-1"]) == {"i-1": ("D0ALICE", "1.1")}
    assert messages.where(["i-2"]) == {"i-2": ("D0ALICE", "2.1")}
    assert messages.where(["i-3"]) == {"i-3": ("D0ALICE", "3.1")}
    assert "live#D0ALICE#2.5" not in table.items
    read = messages.read(("D0ALICE", "2.1"))
    assert read is not None
    assert read[0].part("i-2") == part("i-2")
    assert older(None, "2.1")
    assert older(("D0ALICE", "1.999999"), "2.000001")
    assert older(("D0ALICE", "9.1"), "10.1")
    assert not older(("D0ALICE", "2.1"), "2.1")
    assert not older(("D0ALICE", "3.1"), "2.1")


def test_a_message_whose_record_alone_was_refused_is_kept_again_by_the_next_recovery() -> None:
    """Written item by item (its batch refused), a message's record can be refused while its pointer is written: the
    machine's latest message is then one with no record, and nothing changes it (a withdrawal would leave it
    promising its stop). The next sweep's recovery keeps it again (fails on 2af117e: its pointer was not older)."""
    table, slack = Table(), Slack()
    put = table.put_item
    storm = [True]

    def refused_batch(**_: Any) -> dict[str, Any]:
        raise throttled()

    def put_item(Item: dict[str, Any], **params: Any) -> dict[str, Any]:
        if storm[0] and Item["pk"]["S"].startswith("live#"):  # the message's record refused, its pointer not
            raise throttled()
        return put(Item, **params)

    table.batch_write_item = refused_batch  # type: ignore[method-assign,assignment]
    table.put_item = put_item  # type: ignore[method-assign]
    messages = store(table, slack)
    posted(messages, "i-1")
    assert sorted(table.items) == ["live-of#i-1"]
    storm[0] = False

    messages.kept_again([(("D0ALICE", "1.1"), Live((part("i-1"),)))], NOW)

    assert messages.change("i-1", kept_by(ALICE)) == ("D0ALICE", "1.1")
    [shown] = slack.shown
    assert shown.blocks[0]["text"]["text"] == "Kept: GPU machine · $136/day"


def test_the_recovery_reads_the_records_of_all_its_messages_in_one_consistent_batch() -> None:
    """A sweep's recovery asks after every warning message of its outbox: one BatchGetItem for them all, strongly
    consistent (a record missing is written again over whatever it says), not a GetItem each."""
    table, slack = Table(), Slack()
    messages = store(table, slack)
    posted(messages, "i-1")
    asked: list[dict[str, Any]] = []
    batch_get, get = table.batch_get_item, table.get_item

    def batch_get_item(RequestItems: dict[str, Any]) -> dict[str, Any]:
        asked.append(RequestItems["costguard-state"])
        return batch_get(RequestItems)

    def get_item(Key: dict[str, Any], **params: Any) -> dict[str, Any]:
        asked.append({"GetItem": Key["pk"]["S"]})
        return get(Key, **params)

    table.batch_get_item = batch_get_item  # type: ignore[method-assign]
    table.get_item = get_item  # type: ignore[method-assign]

    messages.kept_again([(("D0ALICE", f"{n}.1"), Live((part(f"i-{n}"),))) for n in (1, 2, 3)], NOW)

    assert asked[0] == {
        "Keys": [{"pk": {"S": f"live#D0ALICE#{n}.1"}, "sk": {"S": "live"}} for n in (1, 2, 3)],
        "ConsistentRead": True,
    }
    assert not [a for a in asked if "GetItem" in a]
    assert sorted(k for k in table.items if k.startswith("live#")) == [f"live#D0ALICE#{n}.1" for n in (1, 2, 3)]
