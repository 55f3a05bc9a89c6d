"""The charts posted with the weekly digest, the organization's digest and the quarterly deep dive:
stacked bars (a day's GPU-hours used and idle; a month's EC2 cost on accelerated types and the rest),
drawn with Pillow. Pure: figures in, PNG bytes out, the same bytes for the same figures.

Written to be read in Slack's preview and pasted into a document: laid out on 800 by 400 points, text
of 18 points and more (anti-aliased, FreeType's rendering of the font Pillow ships, so no font file is
bundled), and drawn at twice that (1,600 by 800 pixels: SCALE) so that a high-density screen, or
a slide it is pasted into, shows it sharp. The values on the y-axis carry their unit, dates go under the
bars, each bar's total (or, for the week's GPU-hours, the day's idle cost in dollars) over it, and a legend
carries the period's totals. A bar for part of a period (today so far, a first day the period began
inside) is drawn lighter and says so under its date; a source line at the foot says where the figures come
from and what the dollars are. Pillow is imported when a chart is drawn, not when a handler starts: only
the digests and the deep dive draw, and they draw once a run.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import ImageDraw, ImageFont

Color = tuple[int, int, int]
WIDTH, HEIGHT = 800, 400  # points: the size the chart is laid out for
SCALE = 2  # pixels a point: 1,600 by 800 pixels
WHITE: Color = (255, 255, 255)
INK: Color = (29, 28, 29)
MUTED: Color = (97, 96, 97)
GRID: Color = (226, 226, 226)
# Told apart by people who do not see red from green: blue for work and accelerated spend, orange for
# idle time, grey for the rest of EC2.
BLUE: Color = (29, 105, 180)
ORANGE: Color = (232, 125, 30)
GREY: Color = (160, 160, 160)
TITLE_PX, LEGEND_PX, TEXT_PX, SOURCE_PX = 28, 20, 18, 14


@dataclass(frozen=True)
class Unit:
    """How a chart writes its values: on the axis, over the bars and in the legend."""

    prefix: str = ""  # "$"
    suffix: str = ""  # " GPU-h"

    def short(self, value: float, *, suffix: bool = True) -> str:
        """Compact, for the axis and the bars: 950 GPU-h, 12.5k GPU-h, $4.2k, $1.3M (without the suffix
        over a bar: the axis says it)."""
        magnitude = abs(value)
        if magnitude >= 1_000_000:
            number = f"{value / 1_000_000:.1f}M"
        elif magnitude >= 10_000:
            number = f"{value / 1_000:.0f}k"
        elif magnitude >= 1_000:
            number = f"{value / 1_000:.1f}k"
        elif magnitude < 10 and value != round(value):
            number = f"{value:.1f}"  # a small scale's steps (0.5, 1.5): never two ticks both written 0
        else:
            number = f"{value:.0f}"
        return f"{self.prefix}{number.replace('.0k', 'k').replace('.0M', 'M')}{self.suffix if suffix else ''}"

    def axis(self, value: float, top: float) -> str:
        """A tick: in full on a scale under 10,000 (750, 1,000 GPU-h), compact above ($10k, $20k)."""
        return self.full(value) if top < 10_000 else self.short(value)

    def full(self, value: float) -> str:
        number = f"{value:,.1f}" if abs(value) < 10 and value != round(value) else f"{value:,.0f}"
        return f"{self.prefix}{number}{self.suffix}"


GPU_HOURS = Unit(suffix=" GPU-h")
DOLLARS = Unit(prefix="$")


@dataclass(frozen=True)
class Series:
    name: str
    color: Color


USED = Series("Used", BLUE)
IDLE = Series("Idle", ORANGE)


@dataclass(frozen=True)
class Bar:
    """One bar: its label (a second line after a newline), its two stacked values, what to write over it
    (`note`, in the chart's note unit; None: the bar's total), and `partial`, what part of the period it
    covers when not all of it ("to 09:17", in UTC as the days are): drawn lighter, said under the label."""

    label: str
    low: float
    high: float
    note: float | None = None
    partial: str = ""


BarLike = Bar | tuple[str, float, float]


def day_label(day: date, today: date) -> str:
    """A day's bar: the weekday (or Today) over the date."""
    return f"{'Today' if day == today else f'{day:%a}'}\n{day.day} {day:%b}"


def month_label(month: date) -> str:
    return f"{month:%b}\n{month.year}"


WEEK_TITLE = "GPU-hours a day, used and idle, and what the idle hours cost"


def week_chart(days: Sequence[BarLike], title: str = WEEK_TITLE, *, source: str = "") -> bytes:
    """A day a bar: the GPU-hours used (blue) under the idle ones (orange), and over each bar what its idle
    hours cost on the bill (a Bar's `note`, in dollars)."""
    return bar_chart(
        days, title=title, series=(USED, IDLE), unit=GPU_HOURS, share_of_second=True, note=DOLLARS, source=source
    )


def bar_chart(
    bars: Sequence[BarLike],
    *,
    title: str,
    series: tuple[Series, Series],
    unit: Unit,
    share_of_second: bool = False,
    note: Unit | None = None,
    source: str = "",
    width: int = WIDTH,
    height: int = HEIGHT,
    scale: int = SCALE,
) -> bytes:
    """Stacked bars, the first value under the second; each label may hold a second line ("Mon\\n16 Nov").
    `share_of_second` adds the second series' share of the total to the legend (idle: 22 %); `note`, the
    unit of what each Bar writes over itself (its total, in `unit`, where it writes nothing), and the
    notes' sum in the legend; `source`, the line at the foot. `width` and `height` are points, drawn at
    `scale` pixels each."""
    from PIL import Image, ImageDraw  # noqa: PLC0415  (only the handlers that draw pay for Pillow)

    image = Image.new("RGB", (width * scale, height * scale), WHITE)
    drawn = [b if isinstance(b, Bar) else Bar(*b) for b in bars]
    _Chart(ImageDraw.Draw(image), width, height, unit, scale).plot(
        drawn, title, series, share=share_of_second, note=note, source=source
    )
    out = io.BytesIO()
    # zlib level 3, not Pillow's 6: at 1,600 by 800 pixels the encoding is most of the time (28 ms of CPU at 6,
    # 19 at 3, for a file of 108 KB rather than 96)
    image.save(out, format="PNG", dpi=(72 * scale, 72 * scale), compress_level=3)
    return out.getvalue()


@cache
def _font(size: int) -> ImageFont.FreeTypeFont:
    from PIL import ImageFont  # noqa: PLC0415

    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):  # a Pillow built without FreeType: 6-pixel bitmap text
        raise RuntimeError("Pillow has no FreeType support: the charts need it for legible text")
    return font


def ticks(top: float) -> list[float]:
    """Round values from 0 to at least `top`, 3 to 6 of them: 0, 50, 100, 150 or 0, 2k, 4k..."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * m for m in (1, 2, 2.5, 5, 10) if power * m >= raw)
    return [step * k for k in range(math.ceil(top / step - 1e-9) + 1)]


def lighter(color: Color) -> Color:
    """A bar for part of a period: the same hue, half-way to white."""
    return (
        (color[0] + 255) // 2,
        (color[1] + 255) // 2,
        (color[2] + 255) // 2,
    )


class _Chart:
    """Lays out in points, draws in pixels (`scale` a point)."""

    def __init__(self, draw: ImageDraw.ImageDraw, width: int, height: int, unit: Unit, scale: int = 1) -> None:
        self.draw, self.width, self.height, self.unit, self.scale = draw, width, height, unit, scale

    def text(self, xy: tuple[float, float], text: str, size: int, fill: Color = INK, anchor: str = "la") -> None:
        at = (xy[0] * self.scale, xy[1] * self.scale)
        self.draw.text(at, text, font=_font(size * self.scale), fill=fill, anchor=anchor)

    def text_width(self, text: str, size: int) -> float:
        return max(self.draw.textlength(line, font=_font(size * self.scale)) for line in text.split("\n")) / self.scale

    def line(self, points: list[tuple[float, float]], fill: Color, width: float = 1) -> None:
        s = self.scale
        self.draw.line([(x * s, y * s) for x, y in points], fill=fill, width=max(1, round(width * s)))

    def rectangle(self, box: tuple[float, float, float, float], fill: Color) -> None:
        s = self.scale
        self.draw.rectangle([box[0] * s, box[1] * s, box[2] * s - 1, box[3] * s - 1], fill=fill)

    def plot(
        self,
        bars: Sequence[Bar],
        title: str,
        series: tuple[Series, Series],
        *,
        share: bool,
        note: Unit | None = None,
        source: str = "",
    ) -> None:
        bars = [replace(b, low=max(0.0, b.low), high=max(0.0, b.high)) for b in bars]  # a credit draws no bar
        first, second = sum(b.low for b in bars), sum(b.high for b in bars)
        notes = sum(b.note or 0.0 for b in bars) if note is not None else None
        self.text((24, 16), title, self.fitting(title, TITLE_PX))
        self.legend((first, second), series, share, (note, notes) if note is not None else None)
        scale = ticks(max([b.low + b.high for b in bars] + [0.0]))
        left = 24 + max(self.text_width(self.unit.axis(v, scale[-1]), TEXT_PX) for v in scale) + 12
        rows = max((len(b.label.split("\n")[:2]) + bool(b.partial) for b in bars), default=2)
        foot = 24 if source else 0
        right, top, bottom = self.width - 24, 112, self.height - 14 - 22 * rows - foot
        for value in scale:
            y = bottom - (bottom - top) * value / scale[-1]
            self.line([(left, y), (right, y)], fill=INK if value == 0 else GRID, width=2 if value == 0 else 1)
            self.text((left - 10, y), self.unit.axis(value, scale[-1]), TEXT_PX, MUTED, anchor="rm")
        if source:
            self.text((24, self.height - 10), source, self.fitting(source, SOURCE_PX), MUTED, anchor="ld")
        if not bars:
            self.text(((left + right) / 2, (top + bottom) / 2), "No figures for this period", LEGEND_PX, MUTED, "mm")
            return
        slot = (right - left) / len(bars)
        width = min(slot * 0.62, 90.0)
        for index, bar in enumerate(bars):
            self.bar(bar, left + slot * (index + 0.5), width, (top, bottom, scale[-1]), series=series, note=note)

    def bar(
        self,
        bar: Bar,
        centre: float,
        width: float,
        frame: tuple[float, float, float],
        *,
        series: tuple[Series, Series],
        note: Unit | None,
    ) -> None:
        top, bottom, highest = frame
        low_top = bottom - (bottom - top) * bar.low / highest
        high_top = low_top - (bottom - top) * bar.high / highest
        for upper, lower, color in ((low_top, bottom - 1, series[0].color), (high_top, low_top, series[1].color)):
            if lower - upper >= 0.5:  # less than a pixel draws nothing (the figure over the bar still says it)
                self.rectangle(
                    (centre - width / 2, upper, centre + width / 2, lower), lighter(color) if bar.partial else color
                )
        if note is not None and bar.note is not None:
            self.text((centre, high_top - 6), note.short(bar.note), TEXT_PX, series[1].color, anchor="md")
        else:
            self.text((centre, high_top - 6), self.unit.short(bar.low + bar.high, suffix=False), TEXT_PX, anchor="md")
        lines = bar.label.split("\n")[:2] + ([bar.partial] if bar.partial else [])
        for row, line in enumerate(lines):
            self.text((centre, bottom + 10 + row * 22), line, TEXT_PX, INK if row == 0 else MUTED, anchor="ma")

    def fitting(self, text: str, size: int, room: float = 0.0) -> int:
        """The largest size up to `size` at which `text` fits across the picture (the legend's large totals)."""
        while size > 10 and self.text_width(text, size) + room > self.width - 48:
            size -= 1
        return size

    def legend(
        self,
        totals: tuple[float, float],
        series: tuple[Series, Series],
        share: bool,
        notes: tuple[Unit, float | None] | None = None,
    ) -> None:
        """A swatch, the name and the period's total of each series, then the whole, then the notes' sum (the
        week's idle cost): the chart's totals."""
        whole = sum(totals)
        entries: list[tuple[Color | None, str]] = []
        for item, total in zip(series, totals, strict=True):
            words = f"{item.name} {self.unit.full(total)}"
            if share and item is series[1] and whole:
                words += f" ({total / whole * 100:.0f} %)"
            entries.append((item.color, words))
        entries.append((None, f"Total {self.unit.full(whole)}"))
        if notes is not None and notes[1] is not None:
            entries.append((None, f"Idle cost {notes[0].full(notes[1])}"))
        size = self.fitting("".join(words for _, words in entries), LEGEND_PX, room=2 * 24 + 3 * 28)
        x, y = 24.0, 62.0
        for color, words in entries:
            if color is not None:
                self.rectangle((x, y + 3, x + 16, y + 19), color)
                x += 24
            self.text((x, y), words, size, INK if color is not None else MUTED)
            x += self.text_width(words, size) + 28
