"""The first sweeps of a large team's account: 10,000 GPU instances, 1,000 of them idle, owned by 500
people nobody has looked up yet, against a Slack that enforces its rate limits.

AWS is the benchmark stand-in (30 ms a call); Slack is the stand-in with `RateLimits`: Tier 2 (20 calls
a minute: users.list), Tier 3 (50 a minute: users.lookupByEmail), one post a second per channel, each
refusal a 429 with the Retry-After that lets the call through; 100 ms an answer. Each sweep is the
idle_stopper handler in a fresh interpreter with Lambda's 300 s, one after the other, as the schedule
runs them (the machines stay idle in between). Counted: the idle owners warned after each sweep, the
warnings delivered and recorded on their machine, the warnings sent twice, the sweeps that failed (a
failed sweep is retried, then dead-lettered).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.versus import run_costguard
from testing.aws.server import StandIn
from testing.slack_standin import RateLimits, SlackStandIn
from testing.worlds.fleet import Fleet

INSTANCES, OWNERS, SWEEPS = 10_000, 500, 2
WARNED_AT = "costguard:idle-warned-at"


def main() -> dict[str, Any]:
    fleet = Fleet(INSTANCES, owners=OWNERS, warned=False)
    idle_owners = {i.owner for i in fleet.instances if i.kind == "idle"}
    idle_machines = {i.instance_id for i in fleet.instances if i.kind == "idle"}
    users = {f"user{k}@example.com": f"U{k:05d}" for k in range(OWNERS)}
    by_user = {v: k for k, v in users.items()}
    server = StandIn(fleet, latency_s=0.03, secret={"bot_token": "xoxb-bench"}).start()
    slack = SlackStandIn(users=users, token="xoxb-bench", latency_s=0.1, limits=RateLimits()).start()
    assert slack.limits is not None
    sweeps: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in range(1, SWEEPS + 1):
                calls_before = Counter(slack.calls)
                try:
                    wall, _, _ = run_costguard(server.url, slack, Path(tmp))
                    failed = ""
                except RuntimeError as exc:  # the sweep failed: the scheduler would retry it
                    wall, failed = float("nan"), str(exc)[:200]
                warnings = [m for m in slack.messages if m.direct and is_warning(m)]
                warned_owners = {by_user[m.channel] for m in warnings}
                sweeps.append(
                    {
                        "sweep": n,
                        "wall_s": round(wall, 1),
                        "failed": failed,
                        "idle_owners_warned": len(warned_owners & idle_owners),
                        "warnings_so_far": len(warnings),
                        "slack_calls": dict(sorted((Counter(slack.calls) - calls_before).items())),
                    }
                )
                print(
                    f"  first sweeps, sweep {n}: {sweeps[-1]['wall_s']} s, idle owners warned "
                    f"{sweeps[-1]['idle_owners_warned']}/{len(idle_owners)}, warnings {len(warnings)}"
                    + (f", FAILED: {failed}" if failed else "")
                )
        warnings = [m for m in slack.messages if m.direct and is_warning(m)]
        per_machine = Counter(iid for m in warnings for iid in told(m, idle_machines))
        recorded = {iid for iid, tags in server.tags.items() if WARNED_AT in tags}
        warned_machines = {iid for iid in per_machine if iid}
        return {
            "instances": INSTANCES,
            "idle_machines": len(idle_machines),
            "idle_owners": len(idle_owners),
            "sweeps": sweeps,
            "idle_owners_warned": sweeps[-1]["idle_owners_warned"],
            "warnings_delivered": sum(per_machine.values()),
            "warning_messages": len(warnings),
            "delivered_not_recorded": len(warned_machines - recorded),
            "duplicates": sum(c - 1 for iid, c in per_machine.items() if iid and c > 1),
            "failed_sweeps": sum(1 for s in sweeps if s["failed"]),
            "slack_429s": dict(sorted(slack.limits.refused.items())),
        }
    finally:
        slack.stop()
        server.stop()


def is_warning(message: Any) -> bool:
    """A warning: a message whose parts carry warnings' block ids (or, from before, says so in its words)."""
    marked = any(str(b.get("block_id", "")).startswith("cg-warn-") for b in message.blocks)
    return marked or "has been idle for" in message.text


def told(message: Any, machines: set[str]) -> list[str]:
    """The machines a warning tells about: by their parts' block ids (a message may tell several), or, in
    code from before block ids, the one its text names."""
    marked = [
        str(b["block_id"]).removeprefix("cg-warn-").rsplit("-", 1)[0]
        for b in message.blocks
        if str(b.get("block_id", "")).startswith("cg-warn-")
    ]
    return marked or [next((iid for iid in machines if iid in message.text), "")]


if __name__ == "__main__":
    main()
