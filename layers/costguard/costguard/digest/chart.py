"""The charts posted with the weekly digest, the organization's digest and the quarterly deep dive:
stacked bars (a day's GPU-hours used and idle; a month's EC2 cost on accelerated types and the rest),
drawn with Pillow. Pure: figures in, PNG bytes out, the same bytes for the same figures.

Written to be read in Slack's preview, which shows a picture smaller than its pixels: 800 by 400, text
of 18 px and more (anti-aliased, FreeType's rendering of the font Pillow ships, so no font file is
bundled), the values on the y-axis with their unit, dates under the bars, each bar's total over it, and
a legend that carries the period's totals. Pillow is imported when a chart is drawn, not when a
handler starts: only the digests and the deep dive draw, and they draw once a run.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import ImageDraw, ImageFont

Color = tuple[int, int, int]
WIDTH, HEIGHT = 800, 400
WHITE: Color = (255, 255, 255)
INK: Color = (29, 28, 29)
MUTED: Color = (97, 96, 97)
GRID: Color = (226, 226, 226)
# Told apart by people who do not see red from green: blue for work and accelerated spend, orange for
# idle time, grey for the rest of EC2.
BLUE: Color = (29, 105, 180)
ORANGE: Color = (232, 125, 30)
GREY: Color = (160, 160, 160)
TITLE_PX, LEGEND_PX, TEXT_PX = 28, 20, 18


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


def day_label(day: date, today: date) -> str:
    """A day's bar: the weekday (or Today) over the date."""
    return f"{'Today' if day == today else f'{day:%a}'}\n{day.day} {day:%b}"


def month_label(month: date) -> str:
    return f"{month:%b}\n{month.year}"


def week_chart(days: Sequence[tuple[str, float, float]], title: str = "GPU-hours a day, used and idle") -> bytes:
    """A day a bar: the GPU-hours used (blue) under the idle ones (orange)."""
    return bar_chart(days, title=title, series=(USED, IDLE), unit=GPU_HOURS, share_of_second=True)


def bar_chart(
    bars: Sequence[tuple[str, float, float]],
    *,
    title: str,
    series: tuple[Series, Series],
    unit: Unit,
    share_of_second: bool = False,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> bytes:
    """Stacked bars, the first value under the second; each label may hold a second line ("Mon\\n16 Nov").
    `share_of_second` adds the second series' share of the total to the legend (idle: 22 %)."""
    from PIL import Image, ImageDraw  # noqa: PLC0415  (only the handlers that draw pay for Pillow)

    image = Image.new("RGB", (width, height), WHITE)
    _Chart(ImageDraw.Draw(image), width, height, unit).plot(bars, title, series, share_of_second)
    out = io.BytesIO()
    image.save(out, format="PNG")
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


class _Chart:
    def __init__(self, draw: ImageDraw.ImageDraw, width: int, height: int, unit: Unit) -> None:
        self.draw, self.width, self.height, self.unit = draw, width, height, unit

    def text(self, xy: tuple[float, float], text: str, size: int, fill: Color = INK, anchor: str = "la") -> None:
        self.draw.text(xy, text, font=_font(size), fill=fill, anchor=anchor)

    def text_width(self, text: str, size: int) -> float:
        return max(self.draw.textlength(line, font=_font(size)) for line in text.split("\n"))

    def plot(
        self, bars: Sequence[tuple[str, float, float]], title: str, series: tuple[Series, Series], share: bool
    ) -> None:
        bars = [(label, max(0.0, low), max(0.0, high)) for label, low, high in bars]  # a credit draws no bar
        first, second = sum(b[1] for b in bars), sum(b[2] for b in bars)
        self.text((24, 16), title, self.fitting(title, TITLE_PX))
        self.legend((first, second), series, share)
        scale = ticks(max([low + high for _, low, high in bars] + [0.0]))
        left = 24 + max(self.text_width(self.unit.axis(v, scale[-1]), TEXT_PX) for v in scale) + 12
        right, top, bottom = self.width - 24, 112, self.height - 58
        for value in scale:
            y = bottom - (bottom - top) * value / scale[-1]
            self.draw.line([(left, y), (right, y)], fill=INK if value == 0 else GRID, width=2 if value == 0 else 1)
            self.text((left - 10, y), self.unit.axis(value, scale[-1]), TEXT_PX, MUTED, anchor="rm")
        if not bars:
            self.text(((left + right) / 2, (top + bottom) / 2), "No figures for this period", LEGEND_PX, MUTED, "mm")
            return
        slot = (right - left) / len(bars)
        bar = min(slot * 0.62, 90.0)
        for index, (label, low, high) in enumerate(bars):
            centre = left + slot * (index + 0.5)
            low_top = bottom - (bottom - top) * low / scale[-1]
            high_top = low_top - (bottom - top) * high / scale[-1]
            for upper, lower, color in ((low_top, bottom - 1, series[0].color), (high_top, low_top, series[1].color)):
                if lower - upper >= 1:  # less than a pixel draws nothing (the total over the bar still says it)
                    self.draw.rectangle([centre - bar / 2, upper, centre + bar / 2, lower], fill=color)
            self.text((centre, high_top - 6), self.unit.short(low + high, suffix=False), TEXT_PX, anchor="md")
            for row, line in enumerate(label.split("\n")[:2]):
                self.text((centre, bottom + 10 + row * 22), line, TEXT_PX, INK if row == 0 else MUTED, anchor="ma")

    def fitting(self, text: str, size: int, room: float = 0.0) -> int:
        """The largest size up to `size` at which `text` fits across the picture (the legend's large totals)."""
        while size > 12 and self.text_width(text, size) + room > self.width - 48:
            size -= 1
        return size

    def legend(self, totals: tuple[float, float], series: tuple[Series, Series], share: bool) -> None:
        """A swatch, the name and the period's total of each series, then the whole: the chart's totals."""
        whole = sum(totals)
        entries: list[tuple[Color | None, str]] = []
        for item, total in zip(series, totals, strict=True):
            words = f"{item.name} {self.unit.full(total)}"
            if share and item is series[1] and whole:
                words += f" ({total / whole * 100:.0f} %)"
            entries.append((item.color, words))
        entries.append((None, f"Total {self.unit.full(whole)}"))
        size = self.fitting("".join(words for _, words in entries), LEGEND_PX, room=2 * 24 + 3 * 28)
        x, y = 24.0, 62.0
        for color, words in entries:
            if color is not None:
                self.draw.rectangle([x, y + 3, x + 16, y + 19], fill=color)
                x += 24
            self.text((x, y), words, size, INK if color is not None else MUTED)
            x += self.text_width(words, size) + 28
