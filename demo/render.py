"""Renders what the demo posted to Slack as Slack would show it, plus the fleet tables, in one HTML page.

The page opens with the messages (a reader of the demo wants what costguard says in Slack first), emoji
codes drawn as Slack draws them; the story, the fleet and every decision are folded below.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from testing.slack_standin import Posted

_SPECIAL = re.compile(r"<([^<>]+)>")


def mrkdwn(text: str, users: dict[str, str] | None = None) -> str:
    """Slack mrkdwn → HTML: links, mentions, *bold*, _italic_, ~strike~, `code`, ```blocks```, newlines."""
    names = {v: k.split("@")[0] for k, v in (users or {}).items()}
    out: list[str] = []
    position = 0
    for match in _SPECIAL.finditer(text):
        out.append(_inline(text[position : match.start()]))
        token = match.group(1)
        if token.startswith("@"):
            out.append(f'<span class="mention">@{html.escape(names.get(token[1:], token[1:]))}</span>')
        elif token.startswith("!"):
            out.append(f'<span class="mention">@{html.escape(token[1:].split("|")[0])}</span>')
        else:
            url, _, label = token.partition("|")
            out.append(f'<a href="{html.escape(url)}">{html.escape(html.unescape(label or url))}</a>')
        position = match.end()
    out.append(_inline(text[position:]))
    return "".join(out)


# Slack's emoji codes that costguard's messages use, as Slack draws them (tests/demo checks that every code
# in costguard's text is here).
EMOJI = {
    ":warning:": "\u26a0\ufe0f",
    ":rotating_light:": "\U0001f6a8",
    ":information_source:": "\u2139\ufe0f",
    ":large_blue_circle:": "\U0001f535",
    ":white_check_mark:": "\u2705",
    ":grey_question:": "\u2754",
    ":chart_with_upwards_trend:": "\U0001f4c8",
    ":bell:": "\U0001f514",
    ":arrows_counterclockwise:": "\U0001f504",
}


def emoji(text: str) -> str:
    """Slack's emoji codes in `text` as the characters Slack shows; an unknown code stays as written."""
    for code, character in EMOJI.items():
        text = text.replace(code, character)
    return text


def _inline(text: str) -> str:
    text = emoji(html.escape(html.unescape(text), quote=False))
    text = re.sub(r"```(.+?)```", r"<pre>\1</pre>", text, flags=re.S)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w_])_([^_\n]+)_(?![\w_])", r"<i>\1</i>", text)
    text = re.sub(r"(?<![\w~])~([^~\n]+)~(?![\w~])", r"<s>\1</s>", text)
    return text.replace("\n", "<br>")


def _text(obj: dict[str, Any] | None, users: dict[str, str]) -> str:
    if not obj:
        return ""
    if obj.get("type") == "plain_text":  # Slack draws its emoji codes too, where "emoji" is not false
        plain = html.escape(obj.get("text", ""))
        return emoji(plain) if obj.get("emoji", True) else plain
    return mrkdwn(obj.get("text", ""), users)


def _element(element: dict[str, Any], users: dict[str, str]) -> str:
    kind = element.get("type")
    if kind == "button":
        style = element.get("style", "")
        return f'<span class="button {style}">{_text(element.get("text"), users)}</span>'
    if kind == "image":
        return f'<img class="thumb" src="{html.escape(element.get("image_url", ""))}" alt="{html.escape(element.get("alt_text", ""))}">'
    if kind in ("mrkdwn", "plain_text"):
        return _text(element, users)
    if kind == "static_select":  # a menu: Slack shows its placeholder and, opened, its options
        options = " · ".join(html.escape(str(o["text"]["text"])) for o in element.get("options", []))
        shown = _text(element.get("placeholder"), users) if element.get("placeholder") else "…"
        return f'<span class="button" title="{options}">{shown} ▾</span> <small>{options}</small>'
    if kind == "overflow":  # a menu: Slack shows "⋯" and, pressed, its options
        options = " · ".join(html.escape(str(o["text"]["text"])) for o in element.get("options", []))
        return f'<span class="button" title="{options}">⋯</span> <small>{options}</small>'
    return f"<span>[{html.escape(str(kind))}]</span>"


def block(b: dict[str, Any], users: dict[str, str], files: dict[str, str]) -> str:
    kind = b.get("type")
    if kind == "header":
        return f'<div class="header">{_text(b.get("text"), users)}</div>'
    if kind == "divider":
        return "<hr>"
    if kind == "context":
        return '<div class="context">' + " ".join(_element(e, users) for e in b.get("elements", [])) + "</div>"
    if kind == "actions":
        return '<div class="actions">' + "".join(_element(e, users) for e in b.get("elements", [])) + "</div>"
    if kind == "image":
        src = files.get(b.get("slack_file", {}).get("id", ""), b.get("image_url", ""))
        return f'<div class="image"><img src="{html.escape(src)}" alt="{html.escape(b.get("alt_text", ""))}"></div>'
    if kind == "section":
        parts = []
        if b.get("text"):
            parts.append(f'<div class="text">{_text(b["text"], users)}</div>')
        if b.get("fields"):
            parts.append(
                '<div class="fields">' + "".join(f"<div>{_text(f, users)}</div>" for f in b["fields"]) + "</div>"
            )
        accessory = f'<div class="accessory">{_element(b["accessory"], users)}</div>' if b.get("accessory") else ""
        return f'<div class="section"><div class="body">{"".join(parts)}</div>{accessory}</div>'
    return f'<div class="unknown">[{html.escape(str(kind))} block]</div>'


@dataclass
class Section:
    title: str
    body_html: str


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


STORY_INTRO = (
    "Each scene runs one costguard function's handler, in this process, on a real-shaped event from events/, "
    "against an emulated AWS account (moto, and testing/aws_gaps.py for what moto lacks) and a local Slack, on "
    "the demo's clock (UTC, pinned: the same story whenever it runs). Below the scenes: the fleet at the end, "
    "every idle decision with its reason, every invocation."
)


def story(transcript: str) -> str:
    """The demo's printed story as HTML: each scene (a `== ` heading) and what it printed, up to the fleet at
    the end (which the page shows as a table); the seconds each scene took in wall time are left out."""
    scenes = []
    for chunk in transcript.split("\n== ")[1:]:
        title, _, rest = chunk.partition("\n")
        if title.startswith("The fleet at the end"):
            break
        lines = [line for line in rest.splitlines() if line.strip() and not re.fullmatch(r" *\(\d+\.\d s\)", line)]
        body = f"<pre>{html.escape(chr(10).join(line[3:] if line.startswith('   ') else line for line in lines))}</pre>"
        scenes.append(f"<h3>{html.escape(title)}</h3>" + (body if lines else ""))
    return f"<p>{html.escape(STORY_INTRO)}</p>" + "".join(scenes)


def page(
    title: str,
    sections: Sequence[Section],
    messages: Sequence[Posted],
    users: dict[str, str],
    files: dict[str, str] | None = None,
    uploads: Sequence[dict[str, Any]] = (),
    intro: str = "",
) -> str:
    """The messages first (Slack's view, emoji drawn), then each section folded: the page's first screen is
    what costguard said in Slack."""
    names = {v: k for k, v in users.items()}
    files = files or {}
    rendered = []
    for m in messages:
        where = (
            f"Direct message to {names.get(m.channel, m.channel)}"
            if m.direct
            else ("#channel of the incoming webhook" if m.route == "webhook" else m.channel)
        )
        blocks = "".join(block(b, users, files) for b in m.blocks) or f'<div class="text">{mrkdwn(m.text, users)}</div>'
        edited = ' <span class="edited">(edited)</span>' if m.updated else ""
        rendered.append(
            f'<div class="message"><div class="avatar">cg</div><div class="content">'
            f'<div class="meta"><b>costguard</b> <span class="app">APP</span> <span class="where">{html.escape(where)}</span>{edited}</div>'
            f'<div class="notification">Notification: {emoji(html.escape(m.text))}</div>{blocks}</div></div>'
        )
    for upload in uploads:
        content: bytes = upload.get("bytes", b"")
        data = base64.b64encode(content).decode()
        if content[:8] == b"\x89PNG\r\n\x1a\n":
            shown = f'<div class="image"><img src="data:image/png;base64,{data}" alt="chart"></div>'
        else:  # a text file (the deep dive's CSV): its first lines, and the whole of it to download
            name = html.escape(str(upload.get("filename", "file")))
            head = "\n".join(content.decode(errors="replace").splitlines()[:12])
            shown = (
                f'<pre class="file">{html.escape(head)}\n…</pre>'
                f'<a download="{name}" href="data:text/csv;base64,{data}">{name}</a>'
            )
        rendered.append(
            f'<div class="message"><div class="avatar">cg</div><div class="content">'
            f'<div class="meta"><b>costguard</b> <span class="app">APP</span> <span class="where">'
            f"{html.escape(str(upload.get('channel', '')))}: uploaded a file</span></div>"
            f'<div class="header">{html.escape(str(upload.get("title", "")))}</div>{shown}</div></div>'
        )
    folded = "".join(
        f'<details class="folded"><summary>{html.escape(s.title)}</summary>{s.body_html}</details>' for s in sections
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: -apple-system, "Segoe UI", Lato, Helvetica, Arial, sans-serif; margin: 0; color: #1d1c1d; background: #f8f8f8; }}
main {{ max-width: 1100px; margin: 0 auto; padding: 24px; }}
h1 {{ font-size: 24px; }} h2 {{ font-size: 18px; margin-top: 32px; }} h3 {{ font-size: 14px; margin: 18px 0 4px; }}
table {{ border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }}
th, td {{ border: 1px solid #ddd; padding: 6px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f1f1f1; }}
.slack {{ background: #fff; border: 1px solid #ddd; border-radius: 8px; }}
.message {{ display: flex; gap: 10px; padding: 14px 18px; border-bottom: 1px solid #eee; }}
.avatar {{ width: 36px; height: 36px; border-radius: 6px; background: #2eb67d; color: #fff; display: flex; align-items: center; justify-content: center; font-weight: bold; flex-shrink: 0; }}
.content {{ flex: 1; min-width: 0; font-size: 15px; line-height: 1.46; }}
.meta {{ font-size: 15px; }} .app {{ background: #ddd; font-size: 10px; padding: 1px 3px; border-radius: 2px; }}
.where {{ color: #616061; font-size: 12px; margin-left: 6px; }} .edited {{ color: #616061; font-size: 12px; }}
.notification {{ color: #868686; font-size: 11px; }}
.header {{ font-weight: 900; font-size: 18px; margin: 6px 0; }}
.section {{ display: flex; gap: 12px; margin: 6px 0; }} .section .body {{ flex: 1; }}
.fields {{ display: grid; grid-template-columns: 1fr 1fr; gap: 6px 16px; margin-top: 6px; }}
.context {{ color: #616061; font-size: 12px; margin: 6px 0; }}
.actions {{ margin: 8px 0; display: flex; gap: 8px; flex-wrap: wrap; }}
.button {{ border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px; font-size: 13px; font-weight: bold; background: #fff; }}
.button.primary {{ background: #007a5a; color: #fff; border-color: #007a5a; }}
.button.danger {{ background: #e01e5a; color: #fff; border-color: #e01e5a; }}
code {{ background: #f6f6f6; border: 1px solid #e0e0e0; border-radius: 3px; padding: 0 3px; color: #e01e5a; font-size: 12px; }}
pre {{ background: #f6f6f6; border: 1px solid #e0e0e0; padding: 8px; font-size: 12px; white-space: pre-wrap; }}
.mention {{ background: #e8f5fa; color: #1264a3; border-radius: 3px; padding: 0 2px; }}
.image img {{ max-width: 100%; border: 1px solid #ddd; border-radius: 4px; }}
pre.file {{ font-size: 11px; background: #fff; border: 1px solid #ddd; padding: 6px; overflow-x: auto; }}
hr {{ border: 0; border-top: 1px solid #ddd; }}
.intro {{ color: #616061; font-size: 14px; margin: 0 0 8px; }}
details.folded {{ margin: 12px 0; }} details.folded > summary {{ font-size: 18px; font-weight: bold; cursor: pointer; padding: 6px 0; }}
</style></head><body><main><h1>{html.escape(title)}</h1><p class="intro">{html.escape(intro)}</p>
<h2>Slack, as costguard's messages would appear ({len(messages)})</h2><div class="slack">{"".join(rendered)}</div>
<h2>The story behind the messages</h2>{folded}
</main></body></html>"""
