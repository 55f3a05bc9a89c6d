"""Learned recurring work, read and acted on: for the machines a sweep is about to warn or stop (and only
those), two weeks of quarter-hourly GPU and CPU in as few GetMetricData calls as CloudWatch allows, their
starts and stops, and the learned starts costguard made for them; then each warning or stop is held
back for a run that is near, or carries when costguard starts the machine again (idle/learning.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import CORE_METRIC, GPU_METRIC, GPU_NAMESPACE, Dimensions, MetricRef
from costguard.core import formatting, tags
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.series import Point, Signal
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.decision import Action, Decision
from costguard.idle.learning import HISTORY_DAYS, Learned, LearnedStart, learn, quarters_of, with_pattern
from costguard.state.entries import Entry, EntryKind
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger
from costguard.state.startlog import StartLog, StartRecord

PERIOD = 900  # quarter-hours: two weeks are 1,344 points a series, 75 series a call


def learns(instance: Instance, policy: IdlePolicy) -> bool:
    """Whether recurring work is looked for on this machine: on for the deployment, not off for it."""
    return policy.learned_starts and instance.tags.get(tags.LEARNED_START, "").strip().lower() != tags.OFF


class Learner:
    def __init__(
        self,
        *,
        metrics: MetricReader,
        history: MachineHistory,
        starts: StartLog,
        ledger: Ledger,
        policy: IdlePolicy,
        mode: Mode,
        owner_tag_key: str,
    ) -> None:
        self.metrics, self.history, self.starts, self.ledger = metrics, history, starts, ledger
        self.policy, self.mode, self.owner_tag_key = policy, mode, owner_tag_key

    def adjust(
        self,
        decided: Sequence[tuple[Instance, Decision]],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        now: datetime,
    ) -> list[tuple[Instance, Decision]]:
        """Each warning or stop that would stop a machine, in the light of its recurring work."""
        targets = [
            i for i, d in decided if d.action in (Action.WARN, Action.STOP) and d.will_stop and learns(i, self.policy)
        ]
        if not targets:
            return list(decided)
        quarters = self._quarters(targets, gpu_series, now)
        learned = {i.instance_id: self._learn(i, quarters.get(i.instance_id, []), now) for i in targets}
        out = []
        for instance, decision in decided:
            found = learned.get(instance.instance_id)
            out.append((instance, with_pattern(decision, found, self.policy, now) if found else decision))
        return out

    def note_stops(
        self,
        stopped: Sequence[Instance],
        final: Sequence[tuple[Instance, Decision]],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        now: datetime,
    ) -> None:
        """Each stop before a learned start, kept for the digest's GPU-hours: when, and how many GPUs."""
        promised = {i.instance_id for i, d in final if d.action is Action.STOP and d.start_at is not None}
        for instance in stopped:
            if instance.instance_id in promised:
                gpus = len(gpu_series.get(instance.instance_id, ()))

                def change(kept: StartRecord, gpus: int = gpus) -> None:
                    kept.stopped_at, kept.gpus = formatting.format_time(now), gpus

                self.starts.update(instance.instance_id, now, change)

    def _learn(self, instance: Instance, quarters: list[object], now: datetime) -> Learned:
        iid = instance.instance_id
        record = self.starts.read(iid)
        made = [
            LearnedStart(e, str(s.get("o", "")))
            for s in record.starts
            if (e := formatting.parse_time(s.get("e"))) is not None
        ]
        # The starts people made (costguard's own learned starts say nothing new about the work).
        ours = [t for s in record.starts if (t := formatting.parse_time(s.get("s"))) is not None]
        running = [
            at
            for at, state in self.history.changes(iid)
            if state == "running" and all(abs((at - t).total_seconds()) > 600 for t in ours)
        ]
        zones = ("UTC", self.policy.team_timezone)
        found = learn(quarters, now, zones=zones, running_at=running, made=made, broken=record.broken)  # type: ignore[arg-type]
        if found.outcomes or found.broken:
            self._judged(instance, found, now)
        logger.info("recurring work", instance_id=iid, learned=found.reason)
        return found

    def _judged(self, instance: Instance, found: Learned, now: datetime) -> None:
        """Past learned starts now judged: kept with their outcome, wasted ones in the ledger (keyed by the
        run they were for, so judging one twice records it once), a pattern broken twice remembered."""
        outcome = {formatting.format_time(e): ("used" if work else "wasted") for e, work in found.outcomes}

        def change(kept: StartRecord) -> None:
            for start in kept.starts:
                if not start.get("o") and start.get("e") in outcome:
                    start["o"] = outcome[start["e"]]
            if found.broken and found.broken not in kept.broken:
                kept.broken.append(found.broken)

        self.starts.update(instance.instance_id, now, change)
        wasted = [
            Entry(
                at=e,
                kind=EntryKind.LEARNED_START_WASTED,
                instance_id=instance.instance_id,
                region=instance.region,
                mode=self.mode.value,
                owner=instance.owner(self.owner_tag_key),
                instance_type=instance.instance_type,
                reason=f"started for work expected at {e:%H:%M} UTC, which did not come",
            )
            for e, work in found.outcomes
            if not work
        ]
        if wasted:
            self.ledger.record_many(wasted)

    def _quarters(
        self, instances: Sequence[Instance], gpu_series: Mapping[str, Sequence[Dimensions]], now: datetime
    ) -> dict[str, list[object]]:
        refs: list[MetricRef] = []
        for instance in instances:
            iid = instance.instance_id
            for dims in gpu_series.get(iid, []):
                refs.append(MetricRef(iid, Signal.GPU, "GPU", GPU_NAMESPACE, GPU_METRIC, dims, "Maximum"))
            ec2_dims: Dimensions = (("InstanceId", iid),)
            refs.append(MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", ec2_dims, "Average"))
            refs.append(MetricRef(iid, Signal.BUSIEST_CORE, "core", GPU_NAMESPACE, CORE_METRIC, ec2_dims, "Average"))
        points, _failed = self.metrics.fetch(refs, now - timedelta(days=HISTORY_DAYS), now, period=PERIOD)
        out: dict[str, list[object]] = {}
        for instance in instances:
            mine = {ref: p for ref, p in points.items() if ref.instance_id == instance.instance_id}
            gpus: list[list[Point]] = [p for r, p in mine.items() if r.signal is Signal.GPU]
            core = next((p for r, p in mine.items() if r.signal is Signal.BUSIEST_CORE), [])
            cpu = next((p for r, p in mine.items() if r.signal is Signal.CPU), [])
            out[instance.instance_id] = list(quarters_of(gpus, core, cpu, self.policy, instance.vcpu_count))
        return out
