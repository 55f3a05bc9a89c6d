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
from datetime import UTC, datetime
from typing import Any

from testing.slack_standin import Posted

# Slack's special tokens (docs.slack.dev "Formatting text for app surfaces"): <@U…>, <#C…|name>, <!here>,
# <!subteam^S…|@handle>, <!date^epoch^format[^link]|fallback>, <url|label>.
_SPECIAL = re.compile(r"<([^<>]+)>")
# A token, a code span or a code block is held out of the formatting as a placeholder: private-use
# characters that are neither word characters nor markup, so that *bold* may hold a date (Slack's own rule).
_HELD = re.compile("\ue000(\\d+)\ue001")


def _date(token: str) -> str:
    """<!date^1794816000^{date_short_pretty} at {time}|fallback>: the fallback, written in the page, until the
    page's script (DATES_SCRIPT) draws the date in the reader's zone; the fallback stays on hover."""
    spec, _, fallback = token.partition("|")
    parts = spec.split("^")
    epoch, form, link = parts[1], parts[2] if len(parts) > 2 else "", parts[3] if len(parts) > 3 else ""
    fallback = html.escape(html.unescape(fallback), quote=False)
    try:
        moment = datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:  # Slack shows the fallback of a date it cannot read
        return fallback
    shown = (
        f'<time class="slack-date" datetime="{moment}" data-epoch="{int(epoch)}" '
        f'data-format="{html.escape(html.unescape(form))}" title="{html.escape(html.unescape(fallback))}">'
        f"{fallback}</time>"
    )
    return f'<a href="{html.escape(html.unescape(link))}">{shown}</a>' if link else shown


def _token(token: str, names: dict[str, str]) -> str:
    """One of Slack's special tokens as Slack draws it."""
    if token.startswith("!date^"):
        return _date(token)
    target, _, label = token.partition("|")
    label = html.unescape(label)
    if target.startswith("@"):
        who = label or names.get(target[1:], target[1:])
        return f'<span class="mention">@{html.escape(who)}</span>'
    if target.startswith("#"):
        return f'<span class="mention">#{html.escape(label or target[1:])}</span>'
    if target.startswith("!subteam^"):
        return f'<span class="mention">{html.escape(label or "@" + target.split("^")[1])}</span>'
    if target.startswith("!"):  # <!here>, <!channel>, <!everyone>
        return f'<span class="mention">@{html.escape(label or target[1:])}</span>'
    url = html.unescape(target)
    return f'<a href="{html.escape(url)}">{html.escape(label or url, quote=False)}</a>'


def mrkdwn(text: str, users: dict[str, str] | None = None) -> str:
    """Slack mrkdwn → HTML as Slack draws it: dates in the reader's zone (with the page's script), user,
    channel and group mentions, links, *bold*, _italic_, ~strike~, `code`, ```blocks```, > quotes, newlines.
    Tokens are drawn first and held out of the formatting, so a *bold* run may hold a date or a mention;
    nothing inside code is formatted."""
    names = {v: k.split("@")[0] for k, v in (users or {}).items()}
    held: list[str] = []

    def hold(shown: str) -> str:
        held.append(shown)
        return f"\ue000{len(held) - 1}\ue001"

    text = _SPECIAL.sub(lambda m: hold(_token(m.group(1), names)), text)
    text = html.escape(html.unescape(text), quote=False)
    text = re.sub(r"```\n?(.+?)```", lambda m: hold(f"<pre>{m.group(1)}</pre>"), text, flags=re.S)
    text = re.sub(r"`([^`\n]+)`", lambda m: hold(f"<code>{m.group(1)}</code>"), text)
    text = emoji(text)
    text = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w_])_([^_\n]+)_(?![\w_])", r"<i>\1</i>", text)
    text = re.sub(r"(?<![\w~])~([^~\n]+)~(?![\w~])", r"<s>\1</s>", text)
    text = _quotes(text)
    for _ in range(3):  # a code block may hold a token: what was held inside is let out in turn
        text = _HELD.sub(lambda m: held[int(m.group(1))], text)
    return text


def _quotes(text: str) -> str:
    """Lines that open with ">" (sent as "&gt;") as Slack's quote bar; the others joined by line breaks."""
    out: list[str] = []
    quoted: list[str] = []
    for line in text.split("\n"):
        if line.startswith("&gt;"):
            quoted.append(line[4:].removeprefix(" "))
            continue
        if quoted:
            out.append("<blockquote>" + "<br>".join(quoted) + "</blockquote>")
            quoted = []
        out.append(line + "<br>")
    if quoted:
        out.append("<blockquote>" + "<br>".join(quoted) + "</blockquote>")
    return "".join(out).removesuffix("<br>")


def plain(text: str, users: dict[str, str] | None = None) -> str:
    """A message's `text` as Slack's notification shows it: tokens as their words (a date as its fallback,
    a mention as the name), no markup; HTML-escaped."""
    names = {v: k.split("@")[0] for k, v in (users or {}).items()}

    def words(match: re.Match[str]) -> str:
        target, _, label = match.group(1).partition("|")
        if target.startswith("!date^"):
            return html.unescape(label)
        if target.startswith("@"):
            return "@" + (html.unescape(label) or names.get(target[1:], target[1:]))
        if target.startswith("#"):
            return "#" + (html.unescape(label) or target[1:])
        if target.startswith("!"):
            return html.unescape(label) or "@" + target[1:].split("^")[0]
        return html.unescape(label or target)

    return emoji(html.escape(html.unescape(_SPECIAL.sub(words, text)), quote=False))


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
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


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


def posted_at(ts: str) -> str:
    """A message's time beside its author, as Slack shows it: in the reader's zone (the page's script)."""
    try:
        epoch = int(float(ts))
    except ValueError:
        return ""
    fallback = datetime.fromtimestamp(epoch, UTC).strftime("%H:%M UTC")
    return _date(f"!date^{epoch}^{{time}}|{fallback}").replace('class="slack-date"', 'class="slack-date posted"', 1)


def _moment(ts: str) -> float:
    """A message's or an upload's ts as a number to order by (Slack's order); one without a ts goes last."""
    try:
        return float(ts)
    except ValueError:
        return float("inf")


def threads(messages: Sequence[Posted]) -> list[tuple[Posted, list[Posted]]]:
    """The conversation as Slack shows it: each message that is not a reply, in order, with the replies of its
    thread (oldest first); a reply whose parent is not among `messages` is shown on its own."""
    parents = {(m.channel, m.ts) for m in messages if not getattr(m, "thread_ts", "")}
    replies: dict[tuple[str, str], list[Posted]] = {}
    shown: list[tuple[Posted, list[Posted]]] = []
    for m in messages:
        parent = getattr(m, "thread_ts", "")
        if parent and (m.channel, parent) in parents:
            replies.setdefault((m.channel, parent), []).append(m)
    for m in messages:
        parent = getattr(m, "thread_ts", "")
        if not parent or (m.channel, parent) not in parents:
            shown.append((m, replies.get((m.channel, m.ts), [])))
    for _, thread in shown:
        thread.sort(key=lambda r: float(r.ts))
    return shown


# Slack draws a <!date> in each reader's own zone; so does the page, in the browser's zone, from the epoch
# (docs.slack.dev, "Formatting text for app surfaces": {date_num}, {date}, {date_short}, {date_long}, their
# _pretty forms that say today, yesterday or tomorrow, {time}, {time_secs}, {ago}). Without script the page
# keeps the fallback costguard wrote; with it, the fallback stays on hover.
DATES_SCRIPT = r"""<script>
(function () {
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December"];
  const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  const two = (n) => String(n).padStart(2, "0");
  const nth = (n) => n + ((n % 100 >= 11 && n % 100 <= 13) ? "th" : ({1: "st", 2: "nd", 3: "rd"}[n % 10] || "th"));
  const midnight = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  function pretty(d, first) {
    const days = Math.round((midnight(d) - midnight(new Date())) / 86400000);
    const word = {"-1": "yesterday", "0": "today", "1": "tomorrow"}[days];
    return word && (first ? word[0].toUpperCase() + word.slice(1) : word);
  }
  function ago(d) {
    const seconds = (d.getTime() - Date.now()) / 1000;
    const units = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60]];
    const [unit, size] = units.find(([, s]) => Math.abs(seconds) >= s) || ["second", 1];
    return new Intl.RelativeTimeFormat("en", {numeric: "auto"}).format(Math.round(seconds / size), unit);
  }
  function draw(d, format) {
    const date = MONTHS[d.getMonth()] + " " + nth(d.getDate()) + ", " + d.getFullYear();
    const short = MONTHS[d.getMonth()].slice(0, 3) + " " + d.getDate() + ", " + d.getFullYear();
    const long = DAYS[d.getDay()] + ", " + date;
    const tokens = {
      date_num: () => d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()),
      date: () => date, date_short: () => short, date_long: () => long,
      date_pretty: (first) => pretty(d, first) || date,
      date_short_pretty: (first) => pretty(d, first) || short,
      date_long_pretty: (first) => pretty(d, first) || long,
      time: () => d.toLocaleTimeString(undefined, {hour: "numeric", minute: "2-digit"}),
      time_secs: () => d.toLocaleTimeString(undefined, {hour: "numeric", minute: "2-digit", second: "2-digit"}),
      ago: () => ago(d),
    };
    return format.replace(/\{(\w+)\}/g, (whole, name, at) => tokens[name] ? tokens[name](at === 0) : whole);
  }
  for (const shown of document.querySelectorAll("time.slack-date")) {
    shown.textContent = draw(new Date(Number(shown.dataset.epoch) * 1000), shown.dataset.format);
  }
})();
</script>"""


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

    def drawn(m: Posted, reply: bool = False) -> str:
        where = (
            f"Direct message to {names.get(m.channel, m.channel)}"
            if m.direct
            else ("#channel of the incoming webhook" if m.route == "webhook" else m.channel)
        )
        blocks = "".join(block(b, users, files) for b in m.blocks) or f'<div class="text">{mrkdwn(m.text, users)}</div>'
        edited = ' <span class="edited">(edited)</span>' if m.updated else ""
        # A reply is shown under its parent, where it was posted; one also sent to the channel says so.
        if not reply:
            where = f' <span class="where">{html.escape(where)}</span>'
        else:
            where = ' <span class="where">Also sent to the channel</span>' if getattr(m, "broadcast", False) else ""
        kind = "message reply" if reply else "message"
        return (
            f'<div class="{kind}"><div class="avatar">cg</div><div class="content">'
            f'<div class="meta"><b>costguard</b> <span class="app">APP</span> {posted_at(m.ts)}{where}{edited}</div>'
            f'<div class="notification">Notification: {plain(m.text, users)}</div>{blocks}</div></div>'
        )

    rendered: list[tuple[float, str]] = []  # (when, html): an upload is drawn at its moment among the messages
    for parent, replies in threads(messages):
        shown = drawn(parent)
        if replies:
            count = f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'}"
            shown += (
                f'<div class="thread"><div class="replies">{count}</div>'
                + "".join(drawn(r, reply=True) for r in replies)
                + "</div>"
            )
        rendered.append((_moment(parent.ts), f'<div class="conversation">{shown}</div>'))
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
        at = str(upload.get("ts", ""))
        rendered.append(
            (
                _moment(at),
                f'<div class="message"><div class="avatar">cg</div><div class="content">'
                f'<div class="meta"><b>costguard</b> <span class="app">APP</span> {posted_at(at)} <span class="where">'
                f"{html.escape(str(upload.get('channel', '')))}: uploaded a file</span></div>"
                f'<div class="header">{html.escape(str(upload.get("title", "")))}</div>{shown}</div></div>',
            )
        )
    rendered.sort(key=lambda drawn_at: drawn_at[0])  # stable: messages of one moment keep their order
    folded = "".join(
        f'<details class="folded"><summary>{html.escape(s.title)}</summary>{s.body_html}</details>' for s in sections
    )
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>
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
.content {{ flex: 1; min-width: 0; font-size: 15px; line-height: 1.46; overflow-wrap: anywhere; }}
.meta {{ font-size: 15px; }} .app {{ background: #ddd; font-size: 10px; padding: 1px 3px; border-radius: 2px; }}
.where {{ color: #616061; font-size: 12px; margin-left: 6px; }} .edited {{ color: #616061; font-size: 12px; }}
.notification {{ color: #868686; font-size: 11px; }}
.header {{ font-weight: 900; font-size: 18px; margin: 6px 0; }}
.section {{ display: flex; gap: 12px; margin: 6px 0; }} .section .body {{ flex: 1; min-width: 0; }}
.fields {{ display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 6px 16px; margin-top: 6px; }}
.context {{ color: #616061; font-size: 12px; margin: 6px 0; }}
.actions {{ margin: 8px 0; display: flex; gap: 8px; flex-wrap: wrap; }}
.button {{ border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px; font-size: 13px; font-weight: bold; background: #fff; }}
.button.primary {{ background: #007a5a; color: #fff; border-color: #007a5a; }}
.button.danger {{ background: #e01e5a; color: #fff; border-color: #e01e5a; }}
code {{ background: #f6f6f6; border: 1px solid #e0e0e0; border-radius: 3px; padding: 0 3px; color: #e01e5a; font-size: 12px; }}
pre {{ background: #f6f6f6; border: 1px solid #e0e0e0; padding: 8px; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; max-width: 100%; box-sizing: border-box; }}
blockquote {{ border-left: 4px solid #ddd; margin: 4px 0; padding: 0 0 0 10px; }}
.slack-date {{ text-decoration: underline dotted #bbb; }} time.posted {{ color: #616061; font-size: 12px; text-decoration: none; }}
.thread {{ margin: 0 18px 8px 64px; border-left: 2px solid #e0e0e0; }}
.replies {{ color: #1264a3; font-size: 13px; font-weight: bold; padding: 2px 10px; }}
.message.reply {{ padding: 8px 10px; border-bottom: 0; }} .message.reply .avatar {{ width: 24px; height: 24px; font-size: 11px; }}
.conversation {{ border-bottom: 1px solid #eee; }} .conversation > .message {{ border-bottom: 0; }}
.scroll {{ overflow-x: auto; }}
.mention {{ background: #e8f5fa; color: #1264a3; border-radius: 3px; padding: 0 2px; }}
.image img {{ max-width: 100%; border: 1px solid #ddd; border-radius: 4px; }}
pre.file {{ font-size: 11px; background: #fff; border: 1px solid #ddd; padding: 6px; overflow-x: auto; }}
hr {{ border: 0; border-top: 1px solid #ddd; }}
.intro {{ color: #616061; font-size: 14px; margin: 0 0 8px; }}
details.folded {{ margin: 12px 0; }} details.folded > summary {{ font-size: 18px; font-weight: bold; cursor: pointer; padding: 6px 0; }}
@media (max-width: 600px) {{
  main {{ padding: 8px; }} .message {{ padding: 10px 8px; gap: 8px; }} .avatar {{ width: 28px; height: 28px; }}
  .fields {{ grid-template-columns: minmax(0, 1fr); }} .section {{ flex-wrap: wrap; }}
  .thread {{ margin: 0 4px 8px 24px; }}
}}
</style></head><body><main><h1>{html.escape(title)}</h1><p class="intro">{html.escape(intro)}</p>
<h2>Slack, as costguard's messages would appear ({len(messages)})</h2>
<p class="intro">Dates and times are drawn in your browser's time zone, as Slack shows each reader; hover one for
the text costguard wrote beside it.</p><div class="slack">{"".join(h for _, h in rendered)}</div>
<h2>The story behind the messages</h2>{folded}
</main>{DATES_SCRIPT}</body></html>"""
