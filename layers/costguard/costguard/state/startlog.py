"""The learned starts of each machine (`learned#<instance>` in the state table, kept 30 days after the last
change): the start times costguard promised (before the warning or the stop that announces one: a
`costguard:start-at` it finds on a machine it honours only if it promised it, since anyone who may tag
the machine could write one), the stop costguard made before a learned start (when, how many GPUs it
stopped), each start it made for the work it expected (and, once judged, whether the work came), and
the patterns whose starts found no work twice, which are not used again. Small items, read and written a
machine at a time: only machines about to be warned or stopped, and those started, are read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core import formatting
from costguard.core.observability import logger
from costguard.state.batches import read_batch
from costguard.state.ledger import StateTableBusy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=30)
MAX_STARTS = 40
MAX_PROMISES = 10
JOB = "job"  # the outcome of a start made for a scheduled job: never judged as a learned pattern's
DAY = "day"  # the outcome of a start made for a person's or owner's working day: never judged either


@dataclass
class StartRecord:
    """One machine's learned starts, as kept."""

    starts: list[dict[str, str]] = field(default_factory=list)  # {"e": expected, "s": started, "o": outcome,
    # "c": "1" where costguard's own call made it}
    broken: list[str] = field(default_factory=list)  # patterns not to use again
    stopped_at: str = ""  # costguard's stop before the pending start
    gpus: int = 0  # the GPUs that stop took off
    promised: list[str] | None = None  # start times announced (ISO 8601); None: a record from before they were kept
    for_jobs: list[str] = field(default_factory=list)  # of those, the starts for a job the machine's schedule runs
    for_days: list[str] = field(default_factory=list)  # ... and those for its person's or owner's working day
    # ... and of those made before their run's own, the run's start (tried again until then): {start: run}
    for_nights: dict[str, str] = field(default_factory=dict)

    def started(self) -> list[datetime]:
        """When costguard started the machine (its learned and job starts made)."""
        return [t for s in self.starts if (t := formatting.parse_time(s.get("s"))) is not None]

    def day_starts(self) -> list[datetime]:
        """When the machine was started for its person's or owner's working day: by costguard's own call, or found
        started then (which may be a person's start)."""
        return [t for s in self.starts if s.get("o") == DAY and (t := formatting.parse_time(s.get("s"))) is not None]

    def readied(self) -> list[datetime]:
        """When costguard's own StartInstances started the machine for its person's or owner's working day (not a
        start it only found made, which may be a person's)."""
        return [
            t
            for s in self.starts
            if s.get("o") == DAY and s.get("c") and (t := formatting.parse_time(s.get("s"))) is not None
        ]

    def promise(self, start_at: str, *, job: bool = False, day: bool = False, until: str = "") -> None:
        """A start announced (`until`: the start of the run it is made before, where that is later)."""
        self.promised = _with(self.promised or [], start_at)
        if job:
            self.for_jobs = _with(self.for_jobs, start_at)
        if day:
            self.for_days = _with(self.for_days, start_at)
        kept = [(k, v) for k, v in self.for_nights.items() if k != start_at]  # a start promised again: as now
        self.for_nights = dict([*kept[-(MAX_PROMISES - 1) :], (start_at, until)] if until else kept)

    def until(self, start_at: datetime) -> datetime | None:
        """The start of the run a start promised for `start_at` is made before (tried again until then), or None."""
        run = next((v for k, v in self.for_nights.items() if formatting.parse_time(k) == start_at), None)
        return formatting.parse_time(run)

    def vouches(self, start_at: datetime, stopped_at: datetime | None) -> bool:
        """Whether costguard promised this start: one of its promised times, or, in a record from before
        promises were kept, the stop it recorded is the machine's last."""
        if self.promised is not None:
            return any(formatting.parse_time(p) == start_at for p in self.promised)
        return stopped_at is not None and formatting.parse_time(self.stopped_at) == stopped_at


class StartLog:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def read_many(self, instance_ids: Sequence[str]) -> dict[str, StartRecord]:
        """The records of many machines, 100 a call (empty ones for machines without, or when the table would
        not answer)."""
        out = {i: StartRecord() for i in instance_ids}
        try:
            for item in read_batch(self.client, self.table, [_key(i) for i in dict.fromkeys(instance_ids)]):
                out[str(item["pk"]["S"]).removeprefix("learned#")] = _record(item)
        except (ClientError, BotoCoreError, StateTableBusy, ValueError) as exc:
            logger.warning("learned starts unreadable", machines=len(instance_ids), error=str(exc)[:200])
        return out

    def read(self, instance_id: str) -> StartRecord:
        """What was kept; an empty record when nothing was, or when the table would not answer (a learned
        pattern is then judged without its past starts: they count against it only once read)."""
        try:
            return self.fetch(instance_id)
        except (ClientError, BotoCoreError, ValueError) as exc:
            logger.warning("learned starts unreadable", instance_id=instance_id, error=str(exc)[:200])
            return StartRecord()

    def fetch(self, instance_id: str, *, consistent: bool = False) -> StartRecord:
        """What was kept (an empty record when nothing was); raises when the table would not answer, or
        ValueError when what it holds is not what costguard writes. `consistent`: for a caller about to
        write the record back."""
        kwargs: dict[str, Any] = {"ConsistentRead": True} if consistent else {}
        item = self.client.get_item(TableName=self.table, Key=_key(instance_id), **kwargs).get("Item") or {}
        return _record(item)

    def write(self, instance_id: str, record: StartRecord, now: datetime) -> None:
        """Raises on a failed write: the caller decides what a lost record costs."""
        body: dict[str, Any] = {
            "starts": record.starts[-MAX_STARTS:],
            "broken": record.broken[-MAX_STARTS:],
            "stopped_at": record.stopped_at,
            "gpus": record.gpus,
        }
        if record.promised is not None:
            body["promised"] = record.promised[-MAX_PROMISES:]
        if record.for_jobs:
            body["for_jobs"] = record.for_jobs[-MAX_PROMISES:]
        if record.for_days:
            body["for_days"] = record.for_days[-MAX_PROMISES:]
        if record.for_nights:
            body["for_nights"] = dict(list(record.for_nights.items())[-MAX_PROMISES:])
        self.client.put_item(
            TableName=self.table,
            Item={
                **_key(instance_id),
                "record": {"S": json.dumps(body, separators=(",", ":"))},
                "expires_at": {"N": str(int((now + KEEP).timestamp()))},
            },
        )

    def made(
        self,
        instance_id: str,
        expected: str,
        started: str,
        record: StartRecord,
        now: datetime,
        *,
        job: bool = False,
        day: bool = False,
        called: bool = False,
    ) -> None:
        """A learned start made for the run expected then, kept once however many times it is recorded
        (`record`: as just read). `job`: made for a job the machine's own schedule runs, whose work its
        metrics need not show (a job that begins by waiting); `day`: made for its person's or owner's working
        day; neither is judged against a learned pattern. `called`: made by costguard's own StartInstances (not
        found made, which may be a person's start). Raises on a failed write."""
        if any(s.get("e") == expected for s in record.starts):
            return
        outcome = JOB if job else DAY if day else ""
        record.starts.append(
            {"e": expected, "s": started, **({"o": outcome} if outcome else {}), **({"c": "1"} if called else {})}
        )
        self.write(instance_id, record, now)

    def stopping(self, instance_id: str, stopped_at: str, gpus: int, now: datetime) -> None:
        """The stop costguard is about to make before a learned start: when, and the GPUs it takes off
        (what the start's GPU-hours are counted from). Written before the stop; raises on a failed read or
        write (or an unreadable record: written over, its promises would be lost), and the machine is then
        not stopped."""
        record = self.fetch(instance_id, consistent=True)
        record.stopped_at, record.gpus = stopped_at, gpus
        self.write(instance_id, record, now)

    def update(self, instance_id: str, now: datetime, change: Any) -> bool:
        """Read, change (a function of the record), write; False when that failed (logged, not raised). A
        record that could not be read is left as it is (written over, its broken patterns, past starts and
        promises would be lost)."""
        try:
            record = self.fetch(instance_id)
            change(record)
            self.write(instance_id, record, now)
        except (ClientError, BotoCoreError, ValueError) as exc:
            logger.warning("learned starts not kept", instance_id=instance_id, error=str(exc)[:200])
            return False
        return True


def _record(item: Mapping[str, Any]) -> StartRecord:
    raw = json.loads(item.get("record", {}).get("S", "{}"))
    if not isinstance(raw, dict):
        return StartRecord()
    starts = [s for s in raw.get("starts", []) if isinstance(s, dict)]
    broken = [b for b in raw.get("broken", []) if isinstance(b, str)]
    kept = _times(raw.get("promised")) if isinstance(raw.get("promised"), list) else None  # None: kept none then
    stopped_at, gpus = str(raw.get("stopped_at", "")), int(raw.get("gpus", 0) or 0)
    nights = raw.get("for_nights")
    for_nights = (
        {k: v for k, v in nights.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(nights, dict)
        else {}
    )
    jobs, days = _times(raw.get("for_jobs")), _times(raw.get("for_days"))
    return StartRecord(starts, broken, stopped_at, gpus, kept, jobs, days, for_nights)


def _times(raw: Any) -> list[str]:
    return [p for p in raw if isinstance(p, str)] if isinstance(raw, list) else []


def _with(times: list[str], start_at: str) -> list[str]:
    """The last MAX_PROMISES times, `start_at` last."""
    return [*[p for p in times if p != start_at][-(MAX_PROMISES - 1) :], start_at]


def _key(instance_id: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"learned#{instance_id}"}, "sk": {"S": "learned"}}
