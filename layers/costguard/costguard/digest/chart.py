"""PNG bar charts in pure Python (zlib + struct): the week's GPU-hours used versus idle a day, the
quarter's EC2 spend a month.

No plotting library in the Lambda layer: matplotlib and numpy would add tens of MB of native wheels
and about a second of cold start for one picture a week.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
INK: Color = (29, 28, 29)
GRID: Color = (221, 221, 221)
USED: Color = (46, 182, 125)  # Slack green
IDLE: Color = (224, 30, 90)  # Slack red

# 5x7 bitmap glyphs, one row per string, for the few characters the chart writes.
GLYPHS: dict[str, tuple[str, ...]] = {
    "0": ("01110", "10001", "10011", "10101", "11001", "10001", "01110"),
    "1": ("00100", "01100", "00100", "00100", "00100", "00100", "01110"),
    "2": ("01110", "10001", "00001", "00010", "00100", "01000", "11111"),
    "3": ("11110", "00001", "00001", "01110", "00001", "00001", "11110"),
    "4": ("00010", "00110", "01010", "10010", "11111", "00010", "00010"),
    "5": ("11111", "10000", "11110", "00001", "00001", "10001", "01110"),
    "6": ("00110", "01000", "10000", "11110", "10001", "10001", "01110"),
    "7": ("11111", "00001", "00010", "00100", "01000", "01000", "01000"),
    "8": ("01110", "10001", "10001", "01110", "10001", "10001", "01110"),
    "9": ("01110", "10001", "10001", "01111", "00001", "00010", "01100"),
    "A": ("01110", "10001", "10001", "11111", "10001", "10001", "10001"),
    "C": ("01110", "10001", "10000", "10000", "10000", "10001", "01110"),
    "D": ("11110", "10001", "10001", "10001", "10001", "10001", "11110"),
    "E": ("11111", "10000", "10000", "11110", "10000", "10000", "11111"),
    "F": ("11111", "10000", "10000", "11110", "10000", "10000", "10000"),
    "G": ("01110", "10001", "10000", "10111", "10001", "10001", "01111"),
    "H": ("10001", "10001", "10001", "11111", "10001", "10001", "10001"),
    "I": ("01110", "00100", "00100", "00100", "00100", "00100", "01110"),
    "L": ("10000", "10000", "10000", "10000", "10000", "10000", "11111"),
    "M": ("10001", "11011", "10101", "10101", "10001", "10001", "10001"),
    "N": ("10001", "11001", "10101", "10011", "10001", "10001", "10001"),
    "O": ("01110", "10001", "10001", "10001", "10001", "10001", "01110"),
    "P": ("11110", "10001", "10001", "11110", "10000", "10000", "10000"),
    "R": ("11110", "10001", "10001", "11110", "10100", "10010", "10001"),
    "S": ("01111", "10000", "10000", "01110", "00001", "00001", "11110"),
    "T": ("11111", "00100", "00100", "00100", "00100", "00100", "00100"),
    "U": ("10001", "10001", "10001", "10001", "10001", "10001", "01110"),
    "W": ("10001", "10001", "10001", "10101", "10101", "10101", "01010"),
    "Y": ("10001", "10001", "01010", "00100", "00100", "00100", "00100"),
    "B": ("11110", "10001", "10001", "11110", "10001", "10001", "11110"),
    "J": ("00111", "00010", "00010", "00010", "00010", "10010", "01100"),
    "K": ("10001", "10010", "10100", "11000", "10100", "10010", "10001"),
    "V": ("10001", "10001", "10001", "10001", "10001", "01010", "00100"),
    "X": ("10001", "10001", "01010", "00100", "01010", "10001", "10001"),
    "-": ("00000", "00000", "00000", "11111", "00000", "00000", "00000"),
    " ": ("00000",) * 7,
}


class Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.pixels = [bytearray(WHITE * width) for _ in range(height)]

    def rect(self, x: int, y: int, w: int, h: int, color: Color) -> None:
        for row in range(max(0, y), min(self.height, y + h)):
            start, end = max(0, x), min(self.width, x + w)
            if end > start:
                self.pixels[row][start * 3 : end * 3] = bytes(color) * (end - start)

    def text(self, x: int, y: int, text: str, color: Color = INK, scale: int = 2) -> None:
        for index, char in enumerate(text.upper()):
            glyph = GLYPHS.get(char, GLYPHS[" "])
            for row, bits in enumerate(glyph):
                for col, bit in enumerate(bits):
                    if bit == "1":
                        self.rect(x + (index * 6 + col) * scale, y + row * scale, scale, scale, color)

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(row) for row in self.pixels)

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
        )


def text_width(text: str, scale: int = 2) -> int:
    return len(text) * 6 * scale


def week_chart(days: Sequence[tuple[str, float, float]], width: int = 720, height: int = 360) -> bytes:
    """Stacked bars per day: used GPU-hours (green) under idle GPU-hours (red), with totals on top."""
    return bar_chart(days, ("GPU-HOURS USED", "IDLE"), width, height)


def bar_chart(
    bars: Sequence[tuple[str, float, float]], legend: tuple[str, str], width: int = 720, height: int = 360
) -> bytes:
    """Stacked bars: the first value (green) under the second (red), labelled, with totals on top."""
    canvas = Canvas(width, height)
    left, right, top, bottom = 20, 20, 60, 40
    canvas.text(left, 14, legend[0], USED)
    canvas.text(left + text_width(legend[0] + " ") + 8, 14, legend[1], IDLE)
    plot_h = height - top - bottom
    tallest = max([low + high for _, low, high in bars] + [1.0])
    canvas.rect(left, height - bottom, width - left - right, 2, INK)
    for step in range(1, 4):
        canvas.rect(left, height - bottom - plot_h * step // 4, width - left - right, 1, GRID)
    slot = (width - left - right) // max(1, len(bars))
    bar = int(slot * 0.6)
    for index, (label, low, high) in enumerate(bars):
        x = left + index * slot + (slot - bar) // 2
        low_h = round(plot_h * low / tallest)
        high_h = round(plot_h * high / tallest)
        canvas.rect(x, height - bottom - low_h, bar, low_h, USED)
        canvas.rect(x, height - bottom - low_h - high_h, bar, high_h, IDLE)
        total = _short(low + high)
        canvas.text(x + (bar - text_width(total)) // 2, height - bottom - low_h - high_h - 18, total)
        canvas.text(x + (bar - text_width(label)) // 2, height - bottom + 10, label)
    return canvas.png()


def _short(value: float) -> str:
    """A bar's total in at most a few glyphs: 987, 12K, 3M."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.0f}M"
    if value >= 10_000:
        return f"{value / 1_000:.0f}K"
    return f"{value:.0f}"
