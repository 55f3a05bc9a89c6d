"""The charts (digest/chart.py): valid PNGs at twice the size Slack's preview is laid out for, the same bytes for
the same figures, drawn in well under 100 ms, bars in proportion, anti-aliased text, the idle cost over each
day's bar, a part of a day drawn lighter, a source line at the foot, and Pillow imported by no handler before
it draws."""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date

import pytest
from PIL import Image

from costguard.digest.chart import (
    BLUE,
    DOLLARS,
    GPU_HOURS,
    GREY,
    HEIGHT,
    IDLE,
    SCALE,
    USED,
    WIDTH,
    Bar,
    Series,
    Unit,
    bar_chart,
    day_label,
    lighter,
    month_label,
    ticks,
    week_chart,
)
from testing.handlers import ROOT

TODAY = date(2026, 11, 23)
WEEK = [
    ("Tue\n17 Nov", 310.0, 120.0),
    ("Wed\n18 Nov", 402.0, 95.0),
    ("Thu\n19 Nov", 388.0, 140.0),
    ("Fri\n20 Nov", 295.0, 210.0),
    ("Sat\n21 Nov", 180.0, 260.0),
    ("Sun\n22 Nov", 60.0, 300.0),
    ("Today\n23 Nov", 240.0, 110.0),
]
QUARTER = [("Aug\n2026", 14_000.0, 1_000.0), ("Sep\n2026", 15_000.0, 1_200.0), ("Oct\n2026", 24_500.0, 900.0)]


def quarter_chart() -> bytes:
    return bar_chart(
        QUARTER,
        title="EC2 compute cost a month, 2026 Q3",
        series=(Series("Accelerated types", BLUE), Series("Other EC2", GREY)),
        unit=DOLLARS,
    )


def opened(png: bytes) -> Image.Image:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    Image.open(io.BytesIO(png)).verify()  # every chunk's CRC and the image data
    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.mark.parametrize("draw", [lambda: week_chart(WEEK), quarter_chart, lambda: week_chart([])])
def test_a_chart_is_a_valid_png_at_twice_the_preview_size_and_the_same_bytes_each_time(
    draw: Callable[[], bytes],
) -> None:
    png = draw()
    image = opened(png)
    # laid out on 800 by 400 points, drawn 2 pixels a point: sharp on a high-density screen or a slide
    assert image.size == (WIDTH * SCALE, HEIGHT * SCALE) == (1600, 800)
    assert Image.open(io.BytesIO(png)).info["dpi"] == pytest.approx((144, 144), abs=0.1)
    assert draw() == png


def test_a_chart_is_drawn_in_well_under_100_ms() -> None:
    week_chart(WEEK)  # the first draw imports Pillow and loads the font (bench/charts.py measures it)
    for draw in (lambda: week_chart(WEEK), quarter_chart):
        samples = []
        for _ in range(5):  # CPU time: a busy machine's other work is not the chart's (wall time failed under load)
            started = time.process_time()
            draw()
            samples.append(time.process_time() - started)
        assert statistics.median(samples) < 0.1


def test_the_bars_stand_in_proportion_used_under_idle() -> None:
    image = opened(week_chart([("Mon\n16 Nov", 300.0, 100.0), ("Today\n17 Nov", 100.0, 0.0)]))
    # 0 to 400 GPU-h over the plot: the first bar is blue to 300, orange to 400; the second blue to 100.
    first, second = image.width * 0.32, image.width * 0.77
    column = [image.getpixel((round(first), y)) for y in range(image.height)]
    blue = [y for y, c in enumerate(column) if c == USED.color]
    orange = [y for y, c in enumerate(column) if c == IDLE.color]
    assert blue
    assert orange
    assert max(orange) < min(blue)  # idle stacked on top of used
    assert len(blue) / len(orange) == pytest.approx(3.0, rel=0.05)
    second_blue = [y for y in range(image.height) if image.getpixel((round(second), y)) == USED.color]
    assert len(second_blue) == pytest.approx(len(blue) / 3, rel=0.05)
    assert not any(image.getpixel((round(second), y)) == IDLE.color for y in range(image.height))


def test_text_is_anti_aliased_not_a_bitmap_font() -> None:
    image = opened(week_chart(WEEK))
    # The old 5x7 font drew in the palette's few colours only; FreeType's edges are shades of grey.
    colours = {image.getpixel((x, y)) for x in range(420) for y in range(10, 50)}  # the title
    assert len(colours) > 20


def test_axis_values_carry_their_unit_and_stay_round() -> None:
    def axis(unit: Unit, top: float) -> list[str]:
        scale = ticks(top)
        return [unit.axis(v, scale[-1]) for v in scale]

    assert axis(GPU_HOURS, 517) == ["0 GPU-h", "200 GPU-h", "400 GPU-h", "600 GPU-h"]
    assert axis(GPU_HOURS, 828) == ["0 GPU-h", "250 GPU-h", "500 GPU-h", "750 GPU-h", "1,000 GPU-h"]
    assert axis(DOLLARS, 25_400) == ["$0", "$10k", "$20k", "$30k"]
    assert axis(GPU_HOURS, 0.4) == ["0 GPU-h", "0.1 GPU-h", "0.2 GPU-h", "0.3 GPU-h", "0.4 GPU-h"]
    assert ticks(0) == [0.0, 1.0]
    assert DOLLARS.short(1_250_000) == "$1.2M"
    assert DOLLARS.short(4_200) == "$4.2k"
    assert GPU_HOURS.short(3_000, suffix=False) == "3k"
    assert GPU_HOURS.full(1_234_567) == "1,234,567 GPU-h"
    assert DOLLARS.full(2.5) == "$2.5"


def test_bars_are_labelled_by_date_in_sentence_case() -> None:
    assert day_label(date(2026, 11, 17), TODAY) == "Tue\n17 Nov"
    assert day_label(TODAY, TODAY) == "Today\n23 Nov"
    assert month_label(date(2026, 8, 1)) == "Aug\n2026"


def test_a_credit_or_a_sliver_draws_no_bar_and_breaks_nothing() -> None:
    image = opened(week_chart([("Mon\n16 Nov", -5.0, 0.2), ("Today\n17 Nov", 1_000_000.0, 0.001)]))
    assert image.size == (WIDTH * SCALE, HEIGHT * SCALE)


def colours(image: Image.Image) -> set[tuple[int, int, int]]:
    return {image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)}  # type: ignore[misc]


def column(image: Image.Image, x: float) -> list[tuple[int, int, int]]:
    return [image.getpixel((round(x), y)) for y in range(image.height)]  # type: ignore[misc]


def test_the_days_idle_cost_is_written_over_its_bar_and_a_part_of_a_day_is_drawn_lighter() -> None:
    whole, part = Bar("Sun\n22 Nov", 300.0, 100.0, note=420.0), Bar("Today\n23 Nov", 100.0, 50.0, 80.0, "to 09:17")
    image = opened(week_chart([whole, part]))
    first, second = column(image, image.width * 0.32), column(image, image.width * 0.77)
    # the whole day in the palette's colours; the part of a day in the same hues, half-way to white
    assert USED.color in first
    assert IDLE.color in first
    assert lighter(USED.color) in second
    assert lighter(IDLE.color) in second
    drawn = [y for y, c in enumerate(second) if c in (lighter(USED.color), lighter(IDLE.color))]
    assert set(second[min(drawn) : max(drawn)]) <= {lighter(USED.color), lighter(IDLE.color)}
    # over each bar its idle cost, in the idle colour (the GPU-hours' total over a bar is written in ink)
    top = min(y for y, c in enumerate(first) if c == IDLE.color)
    band = image.crop((round(image.width * 0.25), top - 40 * SCALE, round(image.width * 0.40), top - 2))
    assert IDLE.color in colours(band)
    plain = opened(week_chart([("Sun\n22 Nov", 300.0, 100.0)]))  # no cost given: the total, in ink
    top = min(y for y, c in enumerate(column(plain, plain.width * 0.57)) if c == IDLE.color)
    band = plain.crop((round(plain.width * 0.5), top - 40 * SCALE, round(plain.width * 0.64), top - 2))
    assert IDLE.color not in colours(band)


def test_a_source_line_is_written_at_the_foot_when_given() -> None:
    def foot(png: bytes) -> set[tuple[int, int, int]]:
        image = opened(png)
        # under the y-axis, left of the first bar's label: the source line's start, or nothing
        return colours(image.crop((0, image.height - 16 * SCALE, 90 * SCALE, image.height)))

    assert foot(week_chart(WEEK)) == {(255, 255, 255)}
    assert len(foot(week_chart(WEEK, source="Source: CloudWatch, hour by hour. Days in UTC."))) > 10


@pytest.mark.parametrize(
    "function",
    sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "app.py").exists()),
)
def test_no_handler_imports_pillow_before_it_draws(function: str) -> None:
    code = "import sys, app; print('PIL' in sys.modules)"
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers' / 'costguard'}:{ROOT / 'functions' / function}",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "costguard",
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
