"""The Block Kit checker (testing/blockkit.py) finds each documented limit broken, at its edge, and where."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from testing.blockkit import Problem, problems, refusal


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def md(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def button(action_id: str = "a", **extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": plain("Keep"), "action_id": action_id, "value": "v", **extra}


def confirm(**extra: Any) -> dict[str, Any]:
    return {"title": plain("Stop?"), "text": md("It stops."), "confirm": plain("Stop"), "deny": plain("No"), **extra}


def option(text: str = "Keep", value: str = "v") -> dict[str, Any]:
    return {"text": plain(text), "value": value}


def overflow(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "overflow", "action_id": "menu", "options": options}


def message() -> dict[str, Any]:
    """A message using every block and element costguard sends, each at a limit's edge: valid as it is."""
    return {
        "text": "t" * 4000,
        "blocks": [
            {"type": "header", "text": {**plain("h" * 150), "emoji": True}},
            {
                "type": "section",
                "text": md("s" * 3000),
                "fields": [md("f" * 2000)] * 10,
                "accessory": overflow([option("o" * 75, "v" * 150)] * 5),
            },
            {"type": "context", "elements": [md("c" * 3000)] * 10},
            {"type": "divider", "block_id": "b" * 255},
            {
                "type": "actions",
                "block_id": "act",
                "elements": [
                    button("keep", text=plain("k" * 75), value="v" * 2000, style="primary"),
                    button("stop", style="danger", confirm=confirm(title=plain("t" * 100), text=md("x" * 300))),
                    *[button(f"a{n}") for n in range(23)],
                ],
            },
            {"type": "image", "image_url": "https://x/" + "u" * 2990, "alt_text": "a" * 2000},
        ]
        + [{"type": "divider"}] * 44,
    }


def test_a_message_at_every_limit_is_valid() -> None:
    sent = message()
    assert len(sent["blocks"]) == 50
    assert problems(sent) == []


Edit = Callable[[dict[str, Any]], None]


def at(path: str, value: Any) -> Edit:
    """Set the value at a JSON pointer (`/blocks/1/text/text`) of the message."""

    def edit(sent: dict[str, Any]) -> None:
        *parents, last = path.strip("/").split("/")
        node: Any = sent
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def drop(path: str) -> Edit:
    def edit(sent: dict[str, Any]) -> None:
        *parents, last = path.strip("/").split("/")
        node: Any = sent
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return edit


def push(path: str, value: Any) -> Edit:
    def edit(sent: dict[str, Any]) -> None:
        node: Any = sent
        for part in path.strip("/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        node.append(value)

    return edit


BROKEN: dict[str, tuple[Edit, str, str]] = {
    # what is broken: (the edit, Slack's error, where Slack points)
    "51 blocks": (push("/blocks", {"type": "divider"}), "invalid_blocks", "/blocks"),
    "blocks not an array": (at("/blocks", {"type": "divider"}), "invalid_blocks_format", "/blocks"),
    "text over 4,000": (at("/text", "t" * 4001), "msg_too_long", "/text"),
    "no text with blocks": (drop("/text"), "no_text", "/text"),
    "blank text with blocks": (at("/text", "  "), "no_text", "/text"),
    "header over 150": (at("/blocks/0/text/text", "h" * 151), "invalid_blocks", "/blocks/0/text/text"),
    "header in mrkdwn": (at("/blocks/0/text", md("h")), "invalid_blocks", "/blocks/0/text/type"),
    "empty header": (at("/blocks/0/text/text", ""), "invalid_blocks", "/blocks/0/text/text"),
    "section text over 3,000": (at("/blocks/1/text/text", "s" * 3001), "invalid_blocks", "/blocks/1/text/text"),
    "empty section text": (at("/blocks/1/text/text", ""), "invalid_blocks", "/blocks/1/text/text"),
    "emoji on mrkdwn": (at("/blocks/1/text/emoji", True), "invalid_blocks", "/blocks/1/text/emoji"),
    "a field over 2,000": (at("/blocks/1/fields/3", md("f" * 2001)), "invalid_blocks", "/blocks/1/fields/3/text"),
    "11 fields": (push("/blocks/1/fields", md("f")), "invalid_blocks", "/blocks/1/fields"),
    "section with neither text nor fields": (
        at("/blocks/1", {"type": "section", "accessory": button()}),
        "invalid_blocks",
        "/blocks/1",
    ),
    "6 overflow options": (
        push("/blocks/1/accessory/options", option()),
        "invalid_blocks",
        "/blocks/1/accessory/options",
    ),
    "no overflow option": (at("/blocks/1/accessory/options", []), "invalid_blocks", "/blocks/1/accessory/options"),
    "option label over 75": (
        at("/blocks/1/accessory/options/0", option("o" * 76)),
        "invalid_blocks",
        "/blocks/1/accessory/options/0/text/text",
    ),
    "option value over 150": (
        at("/blocks/1/accessory/options/0", option(value="v" * 151)),
        "invalid_blocks",
        "/blocks/1/accessory/options/0/value",
    ),
    "option label in mrkdwn": (
        at("/blocks/1/accessory/options/0/text", md("o")),
        "invalid_blocks",
        "/blocks/1/accessory/options/0/text/type",
    ),
    "11 context elements": (push("/blocks/2/elements", md("c")), "invalid_blocks", "/blocks/2/elements"),
    "context element over 3,000": (
        at("/blocks/2/elements/0/text", "c" * 3001),
        "invalid_blocks",
        "/blocks/2/elements/0/text",
    ),
    "a button in a context": (at("/blocks/2/elements/0", button()), "invalid_blocks", "/blocks/2/elements/0/type"),
    "block_id over 255": (at("/blocks/3/block_id", "b" * 256), "invalid_blocks", "/blocks/3/block_id"),
    "two blocks with one block_id": (at("/blocks/6/block_id", "act"), "invalid_blocks", "/blocks/6"),
    "26 actions": (push("/blocks/4/elements", button("z")), "invalid_blocks", "/blocks/4/elements"),
    "no action": (at("/blocks/4/elements", []), "invalid_blocks", "/blocks/4/elements"),
    "button label over 75": (
        at("/blocks/4/elements/0/text/text", "k" * 76),
        "invalid_blocks",
        "/blocks/4/elements/0/text/text",
    ),
    "button value over 2,000": (
        at("/blocks/4/elements/0/value", "v" * 2001),
        "invalid_blocks",
        "/blocks/4/elements/0/value",
    ),
    "button style": (at("/blocks/4/elements/2/style", "blue"), "invalid_blocks", "/blocks/4/elements/2/style"),
    "action_id over 255": (
        at("/blocks/4/elements/2/action_id", "a" * 256),
        "invalid_blocks",
        "/blocks/4/elements/2/action_id",
    ),
    "two buttons of a block with one action_id": (
        at("/blocks/4/elements/2/action_id", "keep"),
        "invalid_blocks",
        "/blocks/4",
    ),
    "confirm title over 100": (
        at("/blocks/4/elements/1/confirm/title/text", "t" * 101),
        "invalid_blocks",
        "/blocks/4/elements/1/confirm/title/text",
    ),
    "confirm text over 300": (
        at("/blocks/4/elements/1/confirm/text/text", "x" * 301),
        "invalid_blocks",
        "/blocks/4/elements/1/confirm/text/text",
    ),
    "confirm label over 30": (
        at("/blocks/4/elements/1/confirm/confirm/text", "c" * 31),
        "invalid_blocks",
        "/blocks/4/elements/1/confirm/confirm/text",
    ),
    "confirm without deny": (
        drop("/blocks/4/elements/1/confirm/deny"),
        "invalid_blocks",
        "/blocks/4/elements/1/confirm/deny",
    ),
    "a section's text in an actions block": (
        at("/blocks/4/elements/3", md("x")),
        "invalid_blocks",
        "/blocks/4/elements/3/type",
    ),
    "image alt text over 2,000": (at("/blocks/5/alt_text", "a" * 2001), "invalid_blocks", "/blocks/5/alt_text"),
    "image url over 3,000": (
        at("/blocks/5/image_url", "https://" + "u" * 2993),
        "invalid_blocks",
        "/blocks/5/image_url",
    ),
    "image without alt text": (drop("/blocks/5/alt_text"), "invalid_blocks", "/blocks/5/alt_text"),
    "an unknown block": (at("/blocks/7", {"type": "banner"}), "invalid_blocks", "/blocks/7/type"),
    "an unknown property": (at("/blocks/7/colour", "red"), "invalid_blocks", "/blocks/7/colour"),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_each_broken_limit_is_found_with_slacks_error_and_pointer(case: str) -> None:
    edit, error, pointer = BROKEN[case]
    sent = copy.deepcopy(message())
    edit(sent)
    found = problems(sent)
    assert (error, pointer) in {(p.error, p.pointer) for p in found}, found
    assert {p.error for p in found} == {error}, "one broken limit, one kind of error"


def test_slack_sdk_models_are_asked_too() -> None:
    # A style slack-sdk's ButtonElement refuses: both checkers say so, the models in their own words.
    sent = message()
    sent["blocks"][4]["elements"][0]["style"] = "blue"
    said = [p.message for p in problems(sent)]
    assert any(m.startswith("slack-sdk: style attribute must be one of") for m in said), said


def test_a_message_with_neither_text_nor_blocks_is_no_text() -> None:
    assert problems({"channel": "C1"}) == [Problem("no_text", "/text", "no message text provided")]
    assert problems({"text": "hello"}) == []


def test_blocks_an_update_removes_are_an_empty_array_and_need_a_text() -> None:
    assert problems({"text": "gone", "blocks": []}) == []


def test_slacks_answer_names_the_first_error_and_lists_what_it_says() -> None:
    sent = message()
    sent["blocks"][0]["text"]["text"] = ""
    sent["blocks"][1]["text"]["text"] = ""
    answer = refusal(problems(sent))
    assert answer["ok"] is False
    assert answer["error"] == "invalid_blocks"
    assert answer["errors"] == [
        "must be more than 0 characters [json-pointer:/blocks/0/text/text]",
        "must be more than 0 characters [json-pointer:/blocks/1/text/text]",
    ]
    assert answer["response_metadata"]["messages"][0] == "[ERROR] " + answer["errors"][0]


def test_checking_never_changes_the_message() -> None:
    sent = message()
    sent["blocks"][1]["text"]["emoji"] = True
    before = copy.deepcopy(sent)
    problems(sent)
    assert sent == before
