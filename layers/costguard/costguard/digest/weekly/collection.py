"""The weekly digest's collection: the fleet's fortnight, the ledger's week, the money, the dashboards."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from costguard.aws.billing import BillingReader
from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GpuSeriesFinder
from costguard.aws.commitments import CommitmentReader, ReadOnce
from costguard.aws.ec2 import LIVE_STATES, Ec2
from costguard.aws.pricing import PriceBook
from costguard.aws.ssm import Ssm
from costguard.core import formatting, tags
from costguard.core.money import UNREAD_HOLDS, UNREAD_PLANS, UNREAD_RIS, Billing
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.digest.gaps import gaps_of
from costguard.digest.spend import commitment_use, weekly_spend
from costguard.digest.weekly.dashboards import update_dashboards
from costguard.digest.weekly.hours import give_back, iter_hours
from costguard.digest.weekly.reach import read_unanswered
from costguard.digest.weekly.restarts import RestartReader
from costguard.digest.weekly.rules.advice import Advice, Observed, Weighed, Weighing, observe_one, spot_advice
from costguard.digest.weekly.rules.bill import IdlePrice, basis_line, idle_prices, paid_idle
from costguard.digest.weekly.rules.exempt import exempt_idle
from costguard.digest.weekly.rules.figures import InstanceWeek, Week, empty_week, settle, tally_into
from costguard.digest.weekly.rules.keeps import outlived_keeps
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.starts import failed_starts
from costguard.digest.weekly.savings import LOOKBACK, claimed_since, saved_by_stops, unknown_ends
from costguard.state.entries import Entry, EntryKind
from costguard.state.ledger import Ledger
from costguard.state.worth import Worth, WorthLog

# the sweeps price the stopped machines every 15 minutes: the last price before the week is within this (one
# more Query, the day before's partition)
PRICED_BEFORE = timedelta(hours=1)


@dataclass
class Region:
    name: str
    ec2: Ec2
    gpu_series: GpuSeriesFinder
    metrics: MetricReader
    dashboards: Any  # the region's CloudWatch client, for PutDashboard
    ssm: Ssm | None = None  # where the activity check runs: who has no SSM agent
    bill: BillingReader | None = None  # the bill idle hours are priced on (None: on the instances' own fields)
    trail: CloudTrail | None = None  # the starts of the machines costguard stopped, where nothing else saw them

    @classmethod
    def reading(
        cls,
        name: str,
        client: Callable[[str], Any],
        *,
        mode: Mode,
        policy: IdlePolicy,
        activity_check: bool,
        bill: BillingReader | None = None,
        metrics_client: Any = None,
    ) -> Region:
        """The region's readers over its clients (`client(service)`); SSM's only where the activity check runs.
        `metrics_client`: the CloudWatch client of the fortnight's ListMetrics and GetMetricData, whose requests
        costguard builds itself (one that skips botocore's parameter check); else the region's own."""
        cloudwatch = client("cloudwatch")
        ec2 = Ec2(client("ec2"), name, mode)
        ssm = Ssm(client("ssm")) if activity_check else None
        bulk = metrics_client or cloudwatch
        finder, reader = GpuSeriesFinder(bulk), MetricReader(bulk, policy)
        return cls(name, ec2, finder, reader, cloudwatch, ssm, bill, CloudTrail(client("cloudtrail")))


@dataclass
class DigestCollector:
    regions: Sequence[Region]
    prices: PriceBook
    ledger: Ledger
    reader: CommitmentReader
    ce: Any
    policy: IdlePolicy
    owner_tag_key: str
    team_tag_key: str
    worth: WorthLog | None = None  # what the sweeps found the stopped machines save (None: the stops' prices)
    restarts: RestartReader | None = None  # when the stopped machines ran again (None: the ledger and launch times)

    def collect(self, now: datetime, last_ended: datetime | None = None) -> DigestData:
        # `last_ended`: where the digest before this one ended, if known (its saving counts from there).
        # The seven full days before today, and today so far; compared with the seven days before them.
        end = now
        start = (now - timedelta(days=7)).replace(hour=0, minute=0, second=0, microsecond=0)
        earlier = start - timedelta(days=7)
        errors: list[str] = []
        # The ledger from LOOKBACK before the week: its stops still in force at the week's start saved on this
        # week's bill too (savings.py); the rest of the digest tells of the week's entries alone. Read first: its
        # keeps name the machines whose hours are read again once the fortnight is read (rules/keeps.py).
        read = list(self.ledger.entries_between(start - LOOKBACK, end))
        entries = [e for e in read if e.at >= start]
        keeps = [
            (e.instance_id, e.reason.rpartition(" by ")[2], e.at, until)
            for e in entries
            if e.kind is EntryKind.KEEP and e.applied and (until := formatting.parse_time(e.until))
        ]
        read_back = {instance_id for instance_id, *_ in keeps}
        weeks, raw, last_week, this_week, weighed = self._fortnight(earlier, start, end, read_back)
        # The idle hours priced on the bill, this week's and last week's alike; those already paid, apart. The
        # Reserved Instances and Savings Plans are listed once for the bill and the commitments section both.
        once = ReadOnce()
        billings, bill_errors = read_bills(self.regions, raw, now, once)
        priced: dict[str, IdlePrice] = {}
        for billing in billings:
            machines = [(i, self._list(i)) for i in raw.values() if i.region == billing.region]
            idle, before = this_week.idle_hours_by_instance, last_week.idle_hours_by_instance
            priced.update(idle_prices(billing, machines, idle, before, now))
        weeks = [
            replace(w, bill_usd_per_hour=p.usd_per_hour, paid_by=p.paid_by) if (p := priced.get(w.instance_id)) else w
            for w in weeks
        ]
        settle(this_week, weeks)
        settle(last_week, weeks)
        list_prices = {w.instance_id: w.usd_per_hour for w in weeks}
        advice = self._advice(on_the_bill(weighed, weeks), now, errors)
        # A machine on paid capacity saves nothing on a cheaper size or Spot until the commitment ends.
        advice = [a for a in advice if not a.instance.paid_by]
        started = self._restarts(read, raw, start, end)
        # The sweeps' prices from a little before the week: the price a stop still in force starts the week at.
        worth = week_worth(self.worth, start - PRICED_BEFORE, end)
        # The saving counts the hours from where the digest before this one ended (`since`), so that an hour off
        # (a weekend stop's Monday morning) is claimed by one digest only, never by two, nor left out.
        since = claimed_since(end, last_ended)
        saved = saved_by_stops(read, raw, end, self.prices, worth, started=started, start=since)
        reader = replace(self.reader, once=once)
        commitments = commitment_use(self.ce, reader, start, end, now=now, errors=errors)
        spend_this, spend_last = weekly_spend(self.ce, earlier, start, end, errors)
        errors += reader.errors
        dashboards = update_dashboards({r.name: r.dashboards for r in self.regions}, weeks)
        data = DigestData(
            start,
            end,
            weeks,
            raw,
            this_week,
            last_week,
            entries,
            saved.hours,
            saved.usd,
            commitments,
            spend_this,
            spend_last,
            dashboards,
            errors,
            self.owner_tag_key,
        )
        data.outlived_keeps = outlived_keeps(keeps, weeks, end, self.policy)
        data.exempt_idle = exempt_idle(raw, weeks, this_week, self.policy)
        data.advice = advice
        data.saved_list_usd = saved.list_usd
        data.saved_unknown = unknown_ends(read, raw, end, started, since)
        data.basis = basis_line(billings, now)
        data.paid_idle = paid_idle(priced, this_week.idle_hours_by_instance, list_prices)
        data.failed_starts = failed_starts(entries, raw, end)
        data.unanswered = read_unanswered(((r.name, r.ssm) for r in self.regions), raw.values(), errors)
        data.no_activity_check = [u.instance_id for u in data.unanswered]
        data.gaps = gaps_of(errors)
        data.bill_gaps = gaps_of(bill_errors)
        give_back()  # what the reads freed, before the sending draws its chart
        return data

    def _fortnight(
        self, earlier: datetime, start: datetime, end: datetime, read_back: Set[str]
    ) -> tuple[list[InstanceWeek], dict[str, Instance], Week, Week, Weighed]:
        """The fleet's fortnight, read region by region: each machine's week (its hours let go, but for the
        exempt machines' and those of `read_back`), the machines as EC2 described them, last week and this week
        counted, and the advice weighed."""
        weeks: list[InstanceWeek] = []
        raw: dict[str, Instance] = {}
        last_week, this_week = empty_week(earlier, start), empty_week(start, end)
        # Working hours are not suggested for machines that have them, nor for Auto Scaling members
        # (scheduled scaling is theirs).
        exclude: set[str] = set()
        weighing = Weighing(self.policy, self._list_price, exclude)
        for region in self.regions:
            instances = [
                i
                for i in region.ec2.iter_instances([{"Name": "instance-state-name", "Values": list(LIVE_STATES)}])
                if self.policy.is_accelerated(i.instance_type)
            ]
            raw.update({i.instance_id: i for i in instances})
            exclude.update(i.instance_id for i in instances if tags.SCHEDULE in i.tags or i.auto_scaling_group)
            for week in iter_hours(
                region.name,
                instances,
                earlier,
                end,
                gpu_series=region.gpu_series,
                metrics=region.metrics,
                prices=self.prices,
                owner_tag_key=self.owner_tag_key,
                team_tag_key=self.team_tag_key,
                busy_percent=self.policy.gpu_idle_percent,
            ):
                # Each machine's fortnight is counted and weighed for advice as it is read, then let go: a fleet's
                # week of hours held was most of the digest's memory. Only the exempt machines and those kept from
                # Slack keep this week's hours (what they idled through is read again).
                tally_into(last_week, week, self.policy)
                tally_into(this_week, week, self.policy)
                light = replace(week, hours=())  # what the advice and the rest of the digest hold of it
                if (seen := observe_one(week, start, end)) is not None:
                    weighing.add(Observed(light, seen.hours))
                again = week.instance_id in read_back or tags.EXEMPT in raw[week.instance_id].tags
                weeks.append(week.since(start) if again else light)
        return weeks, raw, last_week, this_week, weighing.weighed()

    def _restarts(
        self, entries: Sequence[Entry], raw: Mapping[str, Instance], start: datetime, end: datetime
    ) -> dict[str, list[datetime]]:
        if self.restarts is None:
            return {}
        trails = {r.name: r.trail for r in self.regions if r.trail is not None}
        return self.restarts.read(entries, raw, trails, start, end)

    def _list(self, instance: Instance) -> float | None:
        return self.prices.hourly(instance.instance_type, instance.region).usd_per_hour

    def _list_price(self, instance_type: str, region: str) -> float | None:
        return self.prices.hourly(instance_type, region).usd_per_hour

    def _advice(self, weighed: Weighed, now: datetime, errors: list[str]) -> list[Advice]:
        """Right-sizing and working hours from the hours read (`weighed`); Spot from EC2's price history, for
        the machines that need it. The largest savings first."""
        price = self._list_price
        spot: dict[tuple[str, str], float] = {}
        for region in self.regions:
            wanted = [(i.instance_type, i.zone) for i, _, _ in weighed.spot if i.region == region.name]
            if not wanted:
                continue
            try:
                spot.update(region.ec2.spot_prices(wanted, now))
            except READ_ERRORS as exc:
                errors.append(f"DescribeSpotPriceHistory: {error_code(exc)}")
        found = [*weighed.sizes, *spot_advice(weighed.spot, price, spot), *weighed.schedules]
        return sorted(found, key=lambda a: -a.saving_usd)


def on_the_bill(weighed: Weighed, weeks: Sequence[InstanceWeek]) -> Weighed:
    """The advice weighed as the hours were read, on its machines as the bill then priced them (what pays
    their hours whether they run or not says which advice is worth giving)."""
    priced = {w.instance_id: w for w in weeks}

    def again(advice: Advice) -> Advice:
        return replace(advice, instance=priced[advice.instance.instance_id])

    spot = [(priced[i.instance_id], hours, longest) for i, hours, longest in weighed.spot]
    return Weighed([again(a) for a in weighed.sizes], spot, [again(a) for a in weighed.schedules])


def read_bills(
    regions: Sequence[Region], raw: Mapping[str, Instance], now: datetime, once: ReadOnce | None = None
) -> tuple[list[Billing], list[str]]:
    """Each region's bill as it stands now; a read that fails prices on demand, and is said in the basis
    line. Without a reader, only what a machine says of itself counts (a hold it names)."""
    billings: list[Billing] = []
    errors: list[str] = []
    for region in regions:
        if region.bill is None:
            billings.append(Billing(region.name, unread=(UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS)))
            errors.append("not asked")
            continue
        running = [i for i in raw.values() if i.region == region.name and i.state == "running"]
        try:
            billings.append(region.bill.read(running, now, once=once))
            errors += region.bill.errors
        except Exception as exc:  # an answer costguard cannot read must not cost the digest: on demand, said
            logger.exception("bill not read: priced on demand", region=region.name)
            billings.append(Billing(region.name, unread=(UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS)))
            errors.append(f"{region.name}: {error_code(exc)}")
    return billings, errors


def week_worth(log: WorthLog | None, start: datetime, end: datetime) -> list[Worth]:
    """The sweeps' prices of the stopped machines this week; none where they cannot be read (the stops' own
    prices then stand, and the log says so)."""
    if log is None:
        return []
    try:
        return list(log.between(start, end))
    except READ_ERRORS as exc:
        logger.warning("stopped machines' prices not read: each stop counted at its own price", error=str(exc))
        return []
