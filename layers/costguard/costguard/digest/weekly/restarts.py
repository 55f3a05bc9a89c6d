"""When the machines costguard stopped this week ran again, as far as anything recorded it: the EC2 state
changes the idle stopper received (state/history.py), costguard's own starts (state/startlog.py), and,
for a stop whose end is still unknown, CloudTrail's StartInstances. Only the machines stopped this week, or
still off into it from a stop before it, are read, and CloudTrail only where the others leave an off-period's
end unknown (from the earliest such stop)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.aws.clients import READ_ERRORS, error_code, utc_time
from costguard.aws.cloudtrail import CloudTrail
from costguard.core import formatting
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.digest.weekly.savings import ran_again, stops_of, unsettled
from costguard.state.entries import Entry
from costguard.state.history import MachineHistory
from costguard.state.startlog import StartLog

TRAIL_PAGES = 20  # per region and digest: 1,000 starts, about 10 s at LookupEvents' 2 calls a second


@dataclass
class RestartReader:
    history: MachineHistory
    starts: StartLog
    most_pages: int = TRAIL_PAGES

    def read(
        self,
        entries: Sequence[Entry],
        raw: Mapping[str, Instance],
        trails: Mapping[str, CloudTrail],
        start: datetime,
        end: datetime,
    ) -> dict[str, list[datetime]]:
        """The starts known of each machine stopped this week, or off into it from a stop in `entries` before
        `start`, and started since (its launch time says so)."""
        out: dict[str, list[datetime]] = defaultdict(list)
        ids = sorted(ran_again(entries, raw, start))
        if ids:
            for instance_id, changes in self.history.changes_of(ids).items():
                out[instance_id] += [at for at, state in changes if state == "running"]
            for instance_id, record in self.starts.read_many(ids).items():
                out[instance_id] += record.started()
        unknown = unsettled(entries, raw, end, out, start)
        stops = stops_of(entries, start)
        since = min([start, *(e.at for i in unknown for e in stops[i])])  # a stop before the week: from it
        for region in sorted({raw[i].region for i in unknown}):
            trail = trails.get(region)
            if trail is None:
                continue
            wanted = {i for i in unknown if raw[i].region == region}
            try:
                for read, (events, more) in enumerate(trail.pages(("EventName", "StartInstances"), since, end), 1):
                    for instance_id, at in started_in(events):
                        if instance_id in wanted:
                            out[instance_id].append(at)
                    if more and read >= self.most_pages:
                        logger.warning("starts in CloudTrail not all read", region=region, pages=read)
                        break
            except READ_ERRORS as exc:  # their off-periods stay unknown, and the digest says how many
                logger.warning("starts in CloudTrail not read", region=region, error=error_code(exc))
        return dict(out)


def started_in(events: Sequence[Mapping[str, object]]) -> list[tuple[str, datetime]]:
    """The machines a page of LookupEvents' StartInstances started, and when (refused starts left out)."""
    out: list[tuple[str, datetime]] = []
    for event in events:
        try:
            record = json.loads(str(event.get("CloudTrailEvent") or "{}"))
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("errorCode") or record.get("eventName") != "StartInstances":
            continue
        stamp = event.get("EventTime")
        at = utc_time(stamp) if isinstance(stamp, datetime) else formatting.parse_time(str(record.get("eventTime")))
        params = record.get("requestParameters") or {}
        wrapped = params.get("instancesSet") if isinstance(params, dict) else None
        items = (wrapped.get("items") if isinstance(wrapped, dict) else None) or []
        if at is None or not isinstance(items, list):
            continue
        out += [(str(i["instanceId"]), at) for i in items if isinstance(i, dict) and i.get("instanceId")]
    return out
