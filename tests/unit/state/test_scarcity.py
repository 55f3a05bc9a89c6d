"""A sweep's scarcity evidence: the table read once, CloudTrail once a day, costguard's own refusals added,
and evidence that cannot be read is none (the machines are judged as before)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from costguard.core.records import Instance
from costguard.core.scarcity import FailedStart
from costguard.state.capacity import CapacityLog
from costguard.state.scarcity import SweepCapacity
from testing.aws.dynamodb import DynamoDBClient

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
REGION = "us-east-1"


def p4d(iid: str = "i-1", zone: str = "us-east-1a") -> Instance:
    return Instance(iid, REGION, "p4d.24xlarge", "running", NOW - timedelta(days=1), zone=zone)


class Trail:
    def __init__(self, found: list[FailedStart], error: Exception | None = None, *, whole: bool = True) -> None:
        self.found, self.error, self.reads, self.whole = found, error, 0, whole
        self.asked: list[tuple[datetime, datetime]] = []

    def refused_for_capacity(self, region: str, start: datetime, end: datetime) -> tuple[list[FailedStart], bool]:
        self.reads += 1
        self.asked.append((start, end))
        if self.error is not None:
            raise self.error
        return [f for f in self.found if start <= f.at < end], self.whole


class Machines:
    """EC2's describe: the type and zone of a machine a StartInstances named."""

    def __init__(self, *known: Instance) -> None:
        self.known = {i.instance_id: i for i in known}

    def iter_instances(self, filters: list[dict[str, Any]]) -> list[Instance]:
        [by_id] = filters
        assert by_id["Name"] == "instance-id"
        assert len(by_id["Values"]) <= 200
        return [self.known[i] for i in by_id["Values"] if i in self.known]


def sweep(log: CapacityLog, trail: Any, *known: Instance, now: datetime = NOW) -> SweepCapacity:
    return SweepCapacity(log=log, trail=trail, ec2=Machines(*known), region=REGION, now=now, time_left=lambda: 900.0)  # type: ignore[arg-type]


def log() -> CapacityLog:
    return CapacityLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]


def test_cloudtrails_failed_starts_are_read_once_a_day_and_kept_for_the_sweeps_between() -> None:
    kept = log()
    launch = FailedStart("p4d.24xlarge", "us-east-1a", NOW - timedelta(hours=5), "CloudTrail", region=REGION)
    start = FailedStart("", "", NOW - timedelta(hours=2), "CloudTrail", instance_id="i-9", region=REGION)
    trail = Trail([launch, start])
    found = sweep(kept, trail, p4d("i-9")).scarcity(p4d())  # the newest days first
    assert found is not None
    assert found.failures == 2  # the StartInstances' machine described: a p4d in 1a
    assert trail.reads == 2  # the first walk, of two weeks, two days a sweep
    assert trail.asked[0] == (NOW - timedelta(days=1, minutes=20), NOW - timedelta(minutes=20))
    for sweeps in range(6):  # caught up over the next sweeps
        sweep(kept, trail, p4d("i-9"), now=NOW + timedelta(minutes=15 * (sweeps + 1))).scarcity(p4d())
    assert trail.reads == 14
    last = NOW + timedelta(minutes=90) - timedelta(minutes=20)  # the seventh sweep's end of walk
    assert min(start for start, _ in trail.asked) == last - timedelta(days=14)  # two weeks back
    assert sweep(kept, trail, now=NOW + timedelta(hours=6)).scarcity(p4d()) is not None
    assert trail.reads == 14  # read again only after a day
    sweep(kept, trail, now=NOW + timedelta(days=1, hours=2)).scarcity(p4d())
    assert trail.reads == 15
    assert sweep(kept, trail).scarcity(p4d(zone="us-east-1b")) is None  # another zone has capacity


def test_costguards_own_refused_start_is_evidence_at_once_and_for_the_next_sweeps() -> None:
    kept = log()
    now = sweep(kept, Trail([]))
    assert now.scarcity(p4d()) is None
    now.refused(p4d(), NOW)
    assert now.scarcity(p4d()) is not None
    assert now.failed_at("i-1") == NOW
    assert sweep(kept, Trail([])).failed_at("i-1") == NOW
    assert sweep(kept, Trail([])).failed_at("i-2") is None


def test_evidence_that_cannot_be_read_is_none_and_the_sweep_goes_on() -> None:
    denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": ""}}, "LookupEvents")
    assert sweep(log(), Trail([], denied)).scarcity(p4d()) is None
    assert sweep(log(), Trail([], ValueError("a page it cannot read"))).scarcity(p4d()) is None

    class Broken:
        def load(self, region: str) -> Any:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "Query")

        def add(self, *args: Any, **kwargs: Any) -> None:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "Put")

    unread = sweep(Broken(), Trail([]))  # type: ignore[arg-type]
    assert unread.scarcity(p4d()) is None
    unread.refused(p4d(), NOW)  # not kept, but evidence for this sweep still
    assert unread.scarcity(p4d()) is not None


def test_without_time_left_cloudtrail_is_left_to_the_next_sweep() -> None:
    trail = Trail([FailedStart("p4d.24xlarge", "us-east-1a", NOW, "CloudTrail", region=REGION)])
    late = SweepCapacity(log=log(), trail=trail, ec2=Machines(), region=REGION, now=NOW, time_left=lambda: 5.0)  # type: ignore[arg-type]
    assert late.scarcity(p4d()) is None
    assert trail.reads == 0


def test_the_walk_stops_short_of_cloudtrails_delivery_lag_and_a_day_cut_short_is_kept_and_passed() -> None:
    kept = log()
    just_now = FailedStart("p4d.24xlarge", "us-east-1a", NOW - timedelta(minutes=5), "CloudTrail", region=REGION)
    trail = Trail([just_now], whole=False)
    kept.add(REGION, [], read_until=NOW - timedelta(days=2, minutes=20))  # two days behind
    sweep(kept, trail).scarcity(p4d())
    assert max(end for _, end in trail.asked) == NOW - timedelta(minutes=20)  # not yet delivered: read next time
    assert kept.load(REGION).read_until == NOW - timedelta(minutes=20)  # a day cut short is not walked again


def test_a_walk_that_fell_behind_catches_up_a_few_days_a_sweep_and_only_while_the_sweep_has_time() -> None:
    kept = log()
    kept.add(REGION, [], read_until=NOW - timedelta(days=10))
    trail = Trail([])
    sweep(kept, trail).scarcity(p4d())
    assert trail.reads == 2
    assert kept.load(REGION).read_until == NOW - timedelta(days=8)
    late = SweepCapacity(log=kept, trail=trail, ec2=Machines(), region=REGION, now=NOW, time_left=lambda: 30.0)  # type: ignore[arg-type]
    late.scarcity(p4d())
    assert trail.reads == 2


def test_costguards_own_refusal_is_not_counted_again_when_cloudtrail_records_it_nor_a_storm_kept_whole() -> None:
    kept = log()
    now = sweep(kept, Trail([]), now=NOW - timedelta(days=1))
    now.refused(p4d("i-7"), NOW - timedelta(hours=3))
    echo = FailedStart("", "", NOW - timedelta(hours=3, seconds=-20), "CloudTrail", instance_id="i-7", region=REGION)
    storm = [
        FailedStart("p5.48xlarge", "us-east-1a", NOW - timedelta(hours=2, minutes=m), "CloudTrail", region=REGION)
        for m in range(50)
    ]
    kept.add(REGION, [], read_until=NOW - timedelta(days=2, minutes=20))  # two days behind
    sweep(kept, Trail([echo, *storm]), p4d("i-7")).scarcity(p4d())
    failures = kept.load(REGION).failures
    assert len([f for f in failures if f.instance_type == "p4d.24xlarge"]) == 1
    assert len([f for f in failures if f.instance_type == "p5.48xlarge"]) == 20


def test_evidence_unread_says_so_and_a_malformed_read_mark_means_read_again() -> None:
    class Broken:
        def load(self, region: str) -> Any:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "Query")

    trail = Trail([])
    unread = sweep(Broken(), trail)  # type: ignore[arg-type]
    assert unread.scarcity(p4d()) is None
    assert unread.unread
    assert trail.reads == 0  # what it found could not be kept: CloudTrail is left for a sweep that can
    client: Any = DynamoDBClient()
    client.put_item(TableName="costguard-state", Item={"pk": {"S": "capacity#us-east-1"}, "sk": {"S": "read"}})
    assert CapacityLog(client, "costguard-state").load(REGION).read_until is None
