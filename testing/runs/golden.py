"""What the weekly digest says about one synthetic account, captured so two code trees can be compared:
the channel post and the replies in its thread (text and blocks), every owner's direct message, the week
kept and handed to the hub, the dashboards, and the handler's answer. The account hands its week to a hub:
since issue 34 the hub, not the account, tells each person once across accounts, so the owners' messages
are those the hub makes of the owners' weeks handed to it (digest/owners.py, this tree's), by email.
The account is testing/worlds/digest.py's, served by testing/aws/digest.py and the Slack stand-in; the
handler runs in a fresh process from the tree given.

`python -m bench.digest_golden --commit REV [--out PATH]` captures the digest of the commit REV (its
library and handlers, taken with `git archive`; this tree's world and stand-ins), into
tests/fixtures/digest_golden.json by default: tests/integration/test_digest_golden.py holds the current
code to it. The fixture was made from the commit before the digest's performance work (issue 27), and made
again when the digest began judging hours by the stopper's rule (issue 31), and when it became a headline
with a thread and the hub began telling the owners (issue 34).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from costguard.digest.handoff import OWNERS_KIND, decode_owners, kind_of
from costguard.digest.owners import OwnerWeek, owner_message
from testing.aws.digest import DigestStandIn
from testing.runs.handler import DIGEST_CHANNEL, ROOT, TOKEN
from testing.runs.weekly_digest import digest_env
from testing.slack_standin import SlackStandIn
from testing.worlds.digest import DigestWorld

SIZE = 400
FIXTURE = ROOT / "tests" / "fixtures" / "digest_golden.json"


def capture(code_root: Path, n: int = SIZE) -> dict[str, Any]:
    """Run the weekly digest of `code_root` over the n-machine account; what it said, everywhere."""
    world = DigestWorld(n)
    aws = DigestStandIn(world, secret={"bot_token": TOKEN})
    aws.start()
    slack = SlackStandIn(users=world.slack_users, token=TOKEN).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "answer.json"
            env = {**digest_env(aws.url, slack, world), "BENCH_CODE_ROOT": str(code_root)}
            done = subprocess.run(
                [sys.executable, "-m", "testing.runs.child", "weekly_digest", str(out)],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            child = json.loads(out.read_text()) if out.exists() else {}
            if child.get("status") != "done":
                raise RuntimeError(
                    f"the digest failed: {child.get('error')}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
        if aws.unsupported:
            raise RuntimeError(f"the stand-in was asked what it does not implement: {sorted(set(aws.unsupported))}")
        slack.assert_all_accepted()  # a golden file of messages Slack would refuse would hold them as right
        answer = dict(child["answer"])
        answer.pop("chart_file")  # a file id the stand-in numbers
        posts = [m for m in slack.messages if m.channel == DIGEST_CHANNEL]
        direct = {m.channel: {"text": m.text, "blocks": m.blocks} for m in slack.messages if m.direct}
        direct.update(_told_by_the_hub(aws.sent))
        week = next(i for i in aws.dynamodb.items() if i["pk"]["S"].startswith("week#"))
        return {
            "instances": n,
            "answer": answer,
            "channel": [{"text": m.text, "blocks": m.blocks} for m in posts],
            "owners": dict(sorted(direct.items())),
            "week_record": json.loads(week["body"]["S"]),
            "handed_over": [json.loads(body) for body in aws.sent if kind_of(body) != OWNERS_KIND],
            "owners_handed": sum(len(decode_owners(b).owners) for b in aws.sent if kind_of(b) == OWNERS_KIND),
            # Each dashboard by its content's hash: 20 dashboards of 50 widgets would be most of the file.
            "dashboards": {name: _hash(json.loads(body)) for name, body in sorted(aws.dashboards.items())},
        }
    finally:
        slack.stop()
        aws.stop()


def _told_by_the_hub(sent: list[str]) -> dict[str, dict[str, Any]]:
    """The message the hub makes for each person (by email) of the owners' weeks handed to it."""
    weeks = [json.loads(body) for body in sent if kind_of(body) != OWNERS_KIND]
    basis = {w["account"]: w.get("basis", "") for w in weeks}
    people: dict[str, list[OwnerWeek]] = {}
    for body in sent:
        if kind_of(body) == OWNERS_KIND:
            for week in decode_owners(body).owners:
                people.setdefault(week.email.lower() or week.owner, []).append(week)
    now = max(datetime.fromisoformat(w["end"]) for w in weeks)  # the hub tells them when the weeks come in
    told = {who: owner_message(theirs, basis, now=now) for who, theirs in people.items()}
    return {who: {"text": m.text, "blocks": m.slack_blocks()} for who, m in told.items()}


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
