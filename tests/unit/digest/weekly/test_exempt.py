"""The weekly digest lists the exempt machines that sat idle, in its thread (never the channel's post): what each
idled (GPU-hours, and dollars at the digest's price of an idle hour), at most ten lines, the costliest first, and
where its week shows work starting at the same hour, that keeping it for its runs would stop it between them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.commitments import CommitmentUse
from costguard.digest.weekly.rules.exempt import ExemptIdle, exempt_idle, recurring_start
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.messages import digest_message, digest_thread
from costguard.digest.weekly.rules.records import DigestData
from testing.slack_text import as_read

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7)
POLICY = IdlePolicy()
BUSY, IDLE = (40.0, 90.0, 85.0, 100.0), (2.0, 1.0, 1.0, 3.0)  # CPU, GPU max, GPU mean, busiest core


def week_of(nightly_days: int, *, hour: int = 2) -> tuple[Hour, ...]:
    """A week running around the clock: idle, but for a 2-hour job from `hour` on the first `nightly_days` days."""
    out = []
    for k in range(7 * 24):
        at = START + timedelta(hours=k)
        busy = at.day - START.day < nightly_days and hour <= at.hour < hour + 2
        out.append(Hour(at, *(BUSY if busy else IDLE)[:3], core_max=(BUSY if busy else IDLE)[3]))
    return tuple(out)


def machine(n: int, hours: tuple[Hour, ...], *, gpus: int = 1, price: float = 1.0) -> InstanceWeek:
    return InstanceWeek(f"i-{n:017x}", "g5.xlarge", "us-east-1", "ana", "", gpus, price, True, "running", hours)


def raw(n: int, **tagged: str) -> Instance:
    return Instance(f"i-{n:017x}", "us-east-1", "g5.xlarge", "running", START - timedelta(days=30), tags=tagged)


def data(weeks: list[InstanceWeek], machines: list[Instance]) -> DigestData:
    summary = summarize(weeks, START, END, POLICY)
    found = DigestData(
        START,
        END,
        weeks,
        {m.instance_id: m for m in machines},
        summary,
        summary,
        [],
        0.0,
        0.0,
        CommitmentUse(None, None, None, None, []),
        None,
        None,
        {},
        [],
        "Owner",
    )
    found.exempt_idle = exempt_idle(found.raw, weeks, summary, POLICY)
    return found


def test_an_exempt_machine_is_listed_with_its_idle_gpu_hours_and_dollars_and_its_nightly_run() -> None:
    nightly = machine(1, week_of(5), gpus=4, price=5.0)  # 168 h, 10 of them at work: 158 idle h, 632 GPU-h
    forgotten = machine(2, week_of(0))  # idle all week, 1 GPU at $1/h: no runs
    busy_kept = machine(3, week_of(5))  # not exempt: not listed
    found = data(
        [nightly, forgotten, busy_kept],
        [raw(1, **{tags.EXEMPT: "nightly training"}), raw(2, **{tags.EXEMPT: ""}), raw(3)],
    )

    assert found.exempt_idle == [
        ExemptIdle(nightly.instance_id, "g5.xlarge", "ana", "nightly training", 632.0, 790.0,
                   "work starts at about 02:00 UTC on 5 days"),
        ExemptIdle(forgotten.instance_id, "g5.xlarge", "ana", "", 168.0, 168.0, ""),
    ]  # fmt: skip
    [housekeeping] = [r.message for r in digest_thread(found) if r.name == "housekeeping"]
    text = as_read("\n".join(b["text"]["text"] for b in housekeeping.slack_blocks() if b["type"] == "section"))
    listed = text[text.index("*Exempt machines that sat idle*") :]
    assert "*Exempt machines that sat idle* (never stopped), the costliest first" in listed
    assert (
        "• `i-00000000000000001` g5.xlarge (ana, exempt: nightly training): idle 632 GPU-h, *$790* · "
        "work starts at about 02:00 UTC on 5 days: keep it for its runs"
    ) in listed
    assert "• `i-00000000000000002` g5.xlarge (ana, exempt: no reason given): idle 168 GPU-h, *$168*\n" in listed
    assert "Where work recurs, `costguard:keep-for-runs=on` stops it between runs instead" in listed
    assert "i-00000000000000003" not in listed
    assert "Exempt machines" not in json.dumps(digest_message(found).slack_blocks())  # the thread, not the post


def test_at_most_ten_exempt_machines_are_listed_the_costliest_first_and_the_rest_counted() -> None:
    weeks = [machine(n, week_of(0), price=float(n)) for n in range(1, 13)]
    found = data(weeks, [raw(n, **{tags.EXEMPT: "x"}) for n in range(1, 13)])
    [housekeeping] = [r.message for r in digest_thread(found) if r.name == "housekeeping"]
    [listed] = [b["text"]["text"] for b in housekeeping.slack_blocks() if "Exempt machines" in str(b)]
    lines = [line for line in listed.split("\n") if line.startswith("• ")]
    assert len(lines) == 10
    assert lines[0].startswith("• `i-0000000000000000c`")  # $12/h: the costliest
    assert "the 10 costliest of 12" in listed
    assert "keep it for its runs" not in listed.lower()  # no runs in their weeks: nothing to suggest


def test_an_exempt_machine_that_never_idled_and_a_week_without_exemptions_add_nothing() -> None:
    always = machine(1, tuple(Hour(START + timedelta(hours=k), *BUSY[:3], core_max=BUSY[3]) for k in range(168)))
    found = data([always], [raw(1, **{tags.EXEMPT: "serving"})])
    assert found.exempt_idle == []
    [housekeeping] = [r.message for r in digest_thread(found) if r.name == "housekeeping"]
    assert "Exempt machines" not in json.dumps(housekeeping.slack_blocks())


def test_work_that_starts_at_the_same_hour_on_fewer_than_3_days_is_no_run() -> None:
    assert recurring_start(machine(1, week_of(2)), POLICY) == ""
    assert recurring_start(machine(1, week_of(3, hour=22)), POLICY) == "work starts at about 22:00 UTC on 3 days"
