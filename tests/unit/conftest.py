"""Unit tests run with the network switched off: pure logic and hand-written fakes only.

Every Slack message a unit test builds (the product's message builders, mostly) is checked against Block Kit
and Slack's limits when the test ends, as the Slack stand-in checks what reaches it (testing/blockkit.py): a
message Slack would refuse fails the test that built it. A test that builds one on purpose says so with
`@pytest.mark.refused_by_slack`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_socket import disable_socket, enable_socket

from costguard.slack.blocks import Message
from testing import blockkit


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    disable_socket(allow_unix_socket=True)
    yield
    enable_socket()


@pytest.fixture(autouse=True)
def _messages_slack_accepts(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    built: list[Message] = []
    made = Message.__post_init__

    def keep(message: Message) -> None:
        made(message)
        built.append(message)

    monkeypatch.setattr(Message, "__post_init__", keep)
    yield
    if request.node.get_closest_marker("refused_by_slack") is not None:
        return
    refused = []
    for message in built:
        found = blockkit.problems({"text": message.text, "blocks": message.slack_blocks()})
        if found:
            refused.append(f"{message.text[:60]!r}: " + "; ".join(str(p) for p in found))
    assert not refused, "Slack would refuse a message this test built:\n" + "\n".join(refused)
