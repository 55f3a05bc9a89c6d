from __future__ import annotations

from costguard.slack.blocks import MAX_BLOCKS, MAX_SECTION, Message, bullet_list, button, escape, header, section


def test_user_text_is_escaped_for_mrkdwn() -> None:
    assert escape("<!channel> & co") == "&lt;!channel&gt; &amp; co"


def test_section_text_is_clipped_to_slack_limit() -> None:
    block = section("x" * 5000)
    assert len(block["text"]["text"]) == MAX_SECTION
    assert block["text"]["text"].endswith("…")


def test_header_and_button_are_clipped() -> None:
    assert len(header("h" * 300)["text"]["text"]) == 150
    assert len(button("b" * 100, "keep", "i-1")["text"]["text"]) == 75


def test_message_with_too_many_blocks_keeps_fifty_and_says_so() -> None:
    message = Message("t", tuple(section(str(i)) for i in range(70)))
    assert len(message.blocks) == MAX_BLOCKS
    assert message.blocks[-1]["elements"][0]["text"] == "…21 more blocks left out"


def test_bullet_list_fits_a_section_and_counts_what_it_left_out() -> None:
    lines = [f"instance i-{n:017d} is idle" for n in range(500)]
    text = bullet_list(lines)
    assert len(text) <= MAX_SECTION
    shown = text.count("• ")
    assert text.endswith(f"…and {500 - shown} more")


def test_bullet_list_shows_everything_when_it_fits() -> None:
    assert bullet_list(["a", "b"]) == "• a\n• b"
