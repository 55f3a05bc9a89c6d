"""Slack's rules for a message, checked the way Slack checks them: what the stand-in refuses, and why.

`problems(payload)` reads a message as it would reach Slack (the arguments of chat.postMessage or
chat.update, or the body of an incoming webhook or a response_url) and returns everything Slack would
refuse, each problem named by the error Slack answers with and pointed at as Slack points
(`[json-pointer:/blocks/3/text/text]`). It is pure: no network, no clock.

Two checkers agree on the blocks. slack-sdk's block models (`Block.parse(...).to_dict()`, which runs their
validators through every nested object), and, for what those models let through, Block Kit's documented
limits checked here (docs.slack.dev/reference/block-kit): the models do not check a header's text type,
a field's length, an empty text, what a context or an actions block may hold, an overflow option's
text type, unknown properties (they drop them; Slack refuses them: "invalid additional property"),
nor any uniqueness.

Limits checked (Slack's documented ones, and the error Slack answers with):
- `invalid_blocks_format`: `blocks` is not a JSON array of objects.
- `invalid_blocks`: more than 50 blocks; an unknown block or element type, or a property Block Kit does
  not define; a text object that is not `plain_text`/`mrkdwn`, is empty, or is longer than its place
  allows (section text 3,000, a field 2,000 and at most 10 fields, a context element 3,000 and at most
  10 elements, a header 150 and plain text only); an actions block with no element or more than 25;
  a button's label (plain text, 75), value (2,000), url (3,000), style (`primary`/`danger`); an overflow
  menu's 1 to 5 options (plain-text label 75, value 150, description 75, url 3,000); a confirm dialog's
  title (plain text, 100), text (300), confirm and deny labels (plain text, 30); an image's url (3,000)
  and alt text (2,000, required); a block_id or action_id over 255; two blocks with one block_id; two
  elements of one block with one action_id ("unique among all other action_ids in the containing block").
- `msg_too_long`: a top-level `text` over 4,000 characters. chat.update documents the error at 4,000;
  chat.postMessage's page still says Slack truncates at 40,000, but Slack's SDK maintainers report
  `msg_too_long` from chat.postMessage above about 4,000 (slackapi, 2024): the stricter one is modelled.
- `no_text`: neither `text` nor `blocks`, as Slack answers. And a message with blocks but no `text`
  (missing, empty or blank): Slack itself posts it (its SDKs only warn: "the top-level `text` argument is
  missing"), but costguard's rule is a fallback on every post and update (it is the notification and what
  a screen reader reads), so the stand-in refuses it with the same `no_text`, its message saying that
  this refusal is the stand-in's, not Slack's.

Not modelled: `msg_blocks_too_long`, which Slack answers for a message whose blocks hold too much text in
all; the point is undocumented (measured by others near 13,000 characters and content-dependent).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import Block

MAX_BLOCKS = 50
MAX_TEXT = 4000  # chat.update: "The `text` field cannot exceed 4,000 characters" (msg_too_long)
MAX_ID = 255  # block_id, action_id
MAX_SECTION_TEXT = 3000
MAX_FIELDS, MAX_FIELD = 10, 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_TEXT_OBJECT = 3000  # a text object anywhere else
MAX_HEADER = 150
MAX_ACTIONS = 25
MAX_BUTTON_TEXT, MAX_BUTTON_VALUE, MAX_URL = 75, 2000, 3000
MAX_OPTIONS, MAX_OPTION_TEXT, MAX_OPTION_VALUE = 5, 75, 150
MAX_CONFIRM_TITLE, MAX_CONFIRM_TEXT, MAX_CONFIRM_BUTTON = 100, 300, 30
MAX_ALT_TEXT = 2000

INVALID_BLOCKS = "invalid_blocks"
INVALID_BLOCKS_FORMAT = "invalid_blocks_format"
MSG_TOO_LONG = "msg_too_long"
NO_TEXT = "no_text"

# Blocks a message may carry (docs.slack.dev/reference/block-kit/blocks: "Available in surfaces: Messages").
MESSAGE_BLOCKS = frozenset(
    {"actions", "context", "divider", "file", "header", "image", "input", "markdown", "rich_text", "section"}
    | {"table", "video"}
)
# Elements an actions block holds ("interactive elements"), and a section's accessory (those, or an image).
INTERACTIVE = frozenset(
    {"button", "checkboxes", "datepicker", "datetimepicker", "overflow", "radio_buttons", "timepicker"}
    | {"static_select", "external_select", "users_select", "conversations_select", "channels_select"}
    | {"multi_static_select", "multi_external_select", "multi_users_select", "multi_conversations_select"}
    | {"multi_channels_select", "workflow_button", "rich_text_input", "plain_text_input"}
)
ACCESSORIES = INTERACTIVE | {"image"}


@dataclass(frozen=True)
class Problem:
    """One thing Slack would refuse: the error it answers with, where (a JSON pointer), and why."""

    error: str
    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} [json-pointer:{self.pointer}]"


def problems(payload: Mapping[str, Any]) -> list[Problem]:
    """Everything Slack would refuse in this message (`text` and `blocks` as sent; either may be absent)."""
    has_blocks = "blocks" in payload and payload["blocks"] is not None
    text = payload.get("text")
    if not has_blocks and not _present(text):
        return [Problem(NO_TEXT, "/text", "no message text provided")]
    found: list[Problem] = []
    if has_blocks:
        found += block_problems(payload["blocks"])
    if isinstance(text, str) and len(text) > MAX_TEXT:
        found.append(Problem(MSG_TOO_LONG, "/text", f"must be no longer than {MAX_TEXT} characters ({len(text)})"))
    if has_blocks and payload["blocks"] and not _present(text):
        found.append(
            Problem(
                NO_TEXT,
                "/text",
                "blocks without a top-level `text` fallback (refused by the stand-in, after costguard's rule: "
                "Slack posts it, and its SDKs warn)",
            )
        )
    return found


def refusal(found: Sequence[Problem]) -> dict[str, Any]:
    """Slack's answer to a message with these problems: the first kind found, and what Slack says of it."""
    error = found[0].error
    said = [str(p) for p in found if p.error == error]
    answer: dict[str, Any] = {"ok": False, "error": error}
    if error == INVALID_BLOCKS:
        answer["errors"] = said
    answer["response_metadata"] = {"messages": [f"[ERROR] {s}" for s in said]}
    return answer


def block_problems(blocks: Any) -> list[Problem]:
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
        return [Problem(INVALID_BLOCKS_FORMAT, "/blocks", "must be a JSON array of block objects")]
    found: list[Problem] = []
    if len(blocks) > MAX_BLOCKS:
        found.append(Problem(INVALID_BLOCKS, "/blocks", f"no more than {MAX_BLOCKS} items allowed ({len(blocks)})"))
    seen: dict[str, int] = {}
    for index, block in enumerate(blocks):
        where = f"/blocks/{index}"
        found += [Problem(INVALID_BLOCKS, p, m) for p, m in _block(block, where)]
        found += [Problem(INVALID_BLOCKS, where, m) for m in _sdk(block)]
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in seen:
                found.append(
                    Problem(INVALID_BLOCKS, where, f"duplicate block_id {block_id!r} (also /blocks/{seen[block_id]})")
                )
            seen.setdefault(block_id, index)
    return found


def _present(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip())


def _sdk(block: Mapping[str, Any]) -> list[str]:
    """slack-sdk's models: their validators and, in a block not checked here property by property, what they
    could not read (they drop an unknown property where Slack refuses it)."""
    try:
        parsed = Block.parse(copy.deepcopy(dict(block)))
        if parsed is None:
            return [f"slack-sdk knows no block of type {block.get('type')!r}"]
        back = parsed.to_dict()
    except Exception as exc:  # the models raise TypeError, KeyError, SlackObjectFormationError...
        return [f"slack-sdk: {exc}"]
    if block.get("type") in _BLOCKS:
        return []
    return [f"slack-sdk dropped {path} (a property Block Kit does not define)" for path in _dropped(block, back, "")]


def _dropped(sent: Any, back: Any, path: str) -> Iterator[str]:
    if isinstance(sent, Mapping):
        for key, value in sent.items():
            if not isinstance(back, Mapping) or key not in back:
                yield f"{path}/{key}"
            else:
                yield from _dropped(value, back[key], f"{path}/{key}")
    elif isinstance(sent, list) and isinstance(back, list):
        for index, value in enumerate(sent):
            if index < len(back):
                yield from _dropped(value, back[index], f"{path}/{index}")


Found = Iterator[tuple[str, str]]  # (pointer, message)


def _block(block: Mapping[str, Any], at: str) -> Found:
    kind = block.get("type")
    yield from _id(block, "block_id", at)
    if kind not in MESSAGE_BLOCKS:
        yield f"{at}/type", f"unsupported block type {kind!r} in a message"
        return
    check = _BLOCKS.get(str(kind))
    if check is not None:
        yield from check(block, at)


def _section(block: Mapping[str, Any], at: str) -> Found:
    yield from _only(block, {"type", "block_id", "text", "fields", "accessory", "expand"}, at)
    if "text" not in block and "fields" not in block:
        yield at, "must define either `text` or `fields`"
    if "text" in block:
        yield from _text(block["text"], f"{at}/text", MAX_SECTION_TEXT)
    if "fields" in block:
        yield from _items(block["fields"], f"{at}/fields", 1, MAX_FIELDS)
        for index, item in enumerate(_list(block["fields"])):
            yield from _text(item, f"{at}/fields/{index}", MAX_FIELD)
    if "accessory" in block:
        yield from _element(block["accessory"], f"{at}/accessory", ACCESSORIES)
        yield from _unique_actions([block["accessory"]], at)


def _header(block: Mapping[str, Any], at: str) -> Found:
    yield from _only(block, {"type", "block_id", "text"}, at)
    yield from _text(block.get("text"), f"{at}/text", MAX_HEADER, plain=True)


def _context(block: Mapping[str, Any], at: str) -> Found:
    yield from _only(block, {"type", "block_id", "elements"}, at)
    yield from _items(block.get("elements"), f"{at}/elements", 1, MAX_CONTEXT_ELEMENTS)
    for index, item in enumerate(_list(block.get("elements"))):
        where = f"{at}/elements/{index}"
        if isinstance(item, Mapping) and item.get("type") == "image":
            yield from _image(item, where, element=True)
        else:
            yield from _text(item, where, MAX_TEXT_OBJECT)


def _divider(block: Mapping[str, Any], at: str) -> Found:
    yield from _only(block, {"type", "block_id"}, at)


def _actions(block: Mapping[str, Any], at: str) -> Found:
    yield from _only(block, {"type", "block_id", "elements"}, at)
    yield from _items(block.get("elements"), f"{at}/elements", 1, MAX_ACTIONS)
    for index, item in enumerate(_list(block.get("elements"))):
        yield from _element(item, f"{at}/elements/{index}", INTERACTIVE)
    yield from _unique_actions(_list(block.get("elements")), at)


def _image_block(block: Mapping[str, Any], at: str) -> Found:
    yield from _image(block, at, element=False)


def _element(element: Any, at: str, allowed: frozenset[str]) -> Found:
    if not isinstance(element, Mapping):
        yield at, "must be an object"
        return
    kind = element.get("type")
    if kind not in allowed:
        yield f"{at}/type", f"element type {kind!r} is not allowed here"
        return
    yield from _id(element, "action_id", at)
    if kind == "button":
        yield from _button(element, at)
    elif kind == "overflow":
        yield from _overflow(element, at)
    elif kind == "image":
        yield from _image(element, at, element=True)


def _button(button: Mapping[str, Any], at: str) -> Found:
    keys = {"type", "text", "action_id", "url", "value", "style", "confirm", "accessibility_label"}
    yield from _only(button, keys, at)
    yield from _text(button.get("text"), f"{at}/text", MAX_BUTTON_TEXT, plain=True)
    yield from _string(button, "value", MAX_BUTTON_VALUE, at)
    yield from _string(button, "url", MAX_URL, at)
    yield from _string(button, "accessibility_label", MAX_BUTTON_TEXT, at)
    if "style" in button and button["style"] not in ("primary", "danger"):
        yield f"{at}/style", "must be one of primary, danger"
    if "confirm" in button:
        yield from _confirm(button["confirm"], f"{at}/confirm")


def _overflow(menu: Mapping[str, Any], at: str) -> Found:
    yield from _only(menu, {"type", "action_id", "options", "confirm"}, at)
    yield from _items(menu.get("options"), f"{at}/options", 1, MAX_OPTIONS)
    for index, option in enumerate(_list(menu.get("options"))):
        where = f"{at}/options/{index}"
        if not isinstance(option, Mapping):
            yield where, "must be an option object"
            continue
        yield from _only(option, {"text", "value", "description", "url"}, where)
        yield from _text(option.get("text"), f"{where}/text", MAX_OPTION_TEXT, plain=True)
        if "value" not in option:
            yield f"{where}/value", "is required"
        yield from _string(option, "value", MAX_OPTION_VALUE, where)
        yield from _string(option, "url", MAX_URL, where)
        if "description" in option:
            yield from _text(option["description"], f"{where}/description", MAX_OPTION_TEXT, plain=True)
    if "confirm" in menu:
        yield from _confirm(menu["confirm"], f"{at}/confirm")


def _confirm(dialog: Any, at: str) -> Found:
    if not isinstance(dialog, Mapping):
        yield at, "must be a confirm object"
        return
    yield from _only(dialog, {"title", "text", "confirm", "deny", "style"}, at)
    yield from _text(dialog.get("title"), f"{at}/title", MAX_CONFIRM_TITLE, plain=True)
    yield from _text(dialog.get("text"), f"{at}/text", MAX_CONFIRM_TEXT)
    yield from _text(dialog.get("confirm"), f"{at}/confirm", MAX_CONFIRM_BUTTON, plain=True)
    yield from _text(dialog.get("deny"), f"{at}/deny", MAX_CONFIRM_BUTTON, plain=True)
    if "style" in dialog and dialog["style"] not in ("primary", "danger"):
        yield f"{at}/style", "must be one of primary, danger"


def _image(image: Mapping[str, Any], at: str, *, element: bool) -> Found:
    keys = {"type", "image_url", "slack_file", "alt_text"} | (set() if element else {"block_id", "title"})
    yield from _only(image, keys, at)
    if ("image_url" in image) == ("slack_file" in image):
        yield at, "must define exactly one of `image_url` or `slack_file`"
    yield from _string(image, "image_url", MAX_URL, at)
    if not isinstance(image.get("alt_text"), str) or not image["alt_text"]:
        yield f"{at}/alt_text", "is required"
    yield from _string(image, "alt_text", MAX_ALT_TEXT, at)
    if "title" in image:
        yield from _text(image["title"], f"{at}/title", MAX_ALT_TEXT, plain=True)


def _text(obj: Any, at: str, limit: int, *, plain: bool = False) -> Found:
    """A text object: `plain_text` (`emoji` allowed) or `mrkdwn` (`verbatim` allowed), 1 to `limit` characters."""
    if not isinstance(obj, Mapping):
        yield at, "must provide a text object"
        return
    kind = obj.get("type")
    allowed = ("plain_text",) if plain else ("plain_text", "mrkdwn")
    if kind not in allowed:
        yield f"{at}/type", f"must be {' or '.join(allowed)}, not {kind!r}"
        return
    yield from _only(obj, {"type", "text", "emoji"} if kind == "plain_text" else {"type", "text", "verbatim"}, at)
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        yield f"{at}/text", "must be more than 0 characters"
    elif len(text) > limit:
        yield f"{at}/text", f"must be less than {limit + 1} characters ({len(text)})"


def _only(obj: Mapping[str, Any], keys: set[str], at: str) -> Found:
    for key in obj:
        if key not in keys:
            yield f"{at}/{key}", f"invalid additional property: {key}"


def _id(obj: Mapping[str, Any], key: str, at: str) -> Found:
    if key in obj:
        value = obj[key]
        if not isinstance(value, str) or not value:
            yield f"{at}/{key}", "must be a non-empty string"
        elif len(value) > MAX_ID:
            yield f"{at}/{key}", f"must be less than {MAX_ID + 1} characters ({len(value)})"


def _string(obj: Mapping[str, Any], key: str, limit: int, at: str) -> Found:
    if key in obj:
        value = obj[key]
        if not isinstance(value, str) or not value:
            yield f"{at}/{key}", "must be more than 0 characters"
        elif len(value) > limit:
            yield f"{at}/{key}", f"must be less than {limit + 1} characters ({len(value)})"


def _items(value: Any, at: str, least: int, most: int) -> Found:
    if not isinstance(value, list):
        yield at, "must be an array"
    elif len(value) < least:
        yield at, f"must provide at least {least} item(s)"
    elif len(value) > most:
        yield at, f"no more than {most} items allowed ({len(value)})"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _unique_actions(elements: Sequence[Any], at: str) -> Found:
    seen: set[str] = set()
    for element in elements:
        action = element.get("action_id") if isinstance(element, Mapping) else None
        if isinstance(action, str):
            if action in seen:
                yield at, f"duplicate action_id {action!r} in one block"
            seen.add(action)


_BLOCKS: dict[str, Callable[[Mapping[str, Any], str], Found]] = {
    "section": _section,
    "header": _header,
    "context": _context,
    "divider": _divider,
    "actions": _actions,
    "image": _image_block,
}
