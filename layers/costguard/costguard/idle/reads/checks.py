"""Asking machines what they are doing, through SSM Run Command, before a warning or a stop.

One sweep asks every machine it is about to warn or stop, at once: a tag write and a SendCommand per
50 machines, then ListCommandInvocations until every answer is in or the wait is over. A machine
that does not answer in time is insufficient data for that sweep, never idle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.ec2 import Ec2
from costguard.aws.ssm import Ssm, chunks
from costguard.core import formatting, tags
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.idle.rules.activity import ActivityCheck, CheckState, ReportError, parse_report

POLL_SECONDS = 2.0
# What the rest of a sweep needs after the wait (Slack, EC2 writes, the ledger), taken off the time left.
RESERVE_SECONDS = 60.0


class ActivityChecker:
    def __init__(
        self,
        *,
        ssm: Ssm,
        ec2: Ec2,
        document: str,
        wait_seconds: float,
        time_left: Callable[[], float],
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ssm = ssm
        self.ec2 = ec2
        self.document = document
        self.wait_seconds = wait_seconds
        self.time_left = time_left
        self.sleep = sleep
        self.clock = clock

    def check(self, instances: Sequence[Instance], now: datetime) -> dict[str, ActivityCheck]:
        ids = [i.instance_id for i in instances]
        if not ids:
            return {}
        try:
            pings = self.ssm.ping_status(ids)
        except (ClientError, BotoCoreError) as exc:
            return dict.fromkeys(ids, ActivityCheck(CheckState.NO_ANSWER, detail=f"SSM: {error_code(exc)}"))
        results: dict[str, ActivityCheck] = {}
        online = []
        for iid in ids:
            status = pings.get(iid)
            if status is None:
                results[iid] = ActivityCheck(CheckState.NO_AGENT)
            elif status != "Online":
                results[iid] = ActivityCheck(CheckState.NO_ANSWER, detail=f"its SSM agent is {status}")
            else:
                online.append(iid)
        if online:
            results.update(self._ask(online, now))
        return results

    def _ask(self, ids: list[str], now: datetime) -> dict[str, ActivityCheck]:
        results: dict[str, ActivityCheck] = {}
        commands: dict[str, set[str]] = {}
        try:
            # IAM lets costguard run its check only on instances carrying this tag, and lets it write
            # the tag only on instances of the accelerator families.
            self.ec2.create_tags(ids, {tags.ACTIVITY_CHECK_AT: formatting.format_time(now)})
            for batch in chunks(ids):
                commands[self.ssm.send(self.document, batch)] = set(batch)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("activity check not sent", error=str(exc))
            detail = f"not sent: {error_code(exc)}"
            asked = set().union(*commands.values()) if commands else set()
            results.update({iid: ActivityCheck(CheckState.NO_ANSWER, detail=detail) for iid in ids if iid not in asked})
        deadline = self.clock() + max(0.0, min(self.wait_seconds, self.time_left() - RESERVE_SECONDS))
        while commands and self.clock() < deadline:
            self.sleep(POLL_SECONDS)
            for command_id, waiting in list(commands.items()):
                try:
                    invocations = self.ssm.invocations(command_id)
                except (ClientError, BotoCoreError) as exc:
                    logger.warning("activity check answers unreadable", command_id=command_id, error=str(exc))
                    continue
                for invocation in invocations:
                    if invocation.done and invocation.instance_id in waiting:
                        results[invocation.instance_id] = _answer(invocation.status, invocation.output)
                        waiting.discard(invocation.instance_id)
                if not waiting:
                    del commands[command_id]
        late = {iid for waiting in commands.values() for iid in waiting}
        seconds = f"{self.wait_seconds:g} s"
        results.update({iid: ActivityCheck(CheckState.NO_ANSWER, detail=f"no answer in {seconds}") for iid in late})
        return results


def _answer(status: str, output: str) -> ActivityCheck:
    if status != "Success":
        return ActivityCheck(CheckState.NO_ANSWER, detail=f"the check ended {status}")
    try:
        return ActivityCheck(CheckState.ANSWERED, parse_report(output))
    except ReportError as exc:
        return ActivityCheck(CheckState.NO_ANSWER, detail=str(exc))
