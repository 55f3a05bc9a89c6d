"""Plain typed records that adapters return and decisions consume, shared by every feature."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Instance:
    """One EC2 instance as DescribeInstances describes it, reduced to what costguard decides on."""

    instance_id: str
    region: str
    instance_type: str
    state: str
    launch_time: datetime
    tags: Mapping[str, str] = field(default_factory=dict)
    volume_ids: tuple[str, ...] = ()
    root_device_type: str = "ebs"
    lifecycle: str = ""  # "spot", "scheduled", "capacity-block" or "" for on-demand
    spot_request_id: str = ""
    hibernation_configured: bool = False
    platform: str = ""
    private_dns_name: str = ""
    vcpus: int = 0  # CpuOptions' cores x threads per core; 0 when EC2 did not say
    account: str = ""  # the reservation's OwnerId: the account the machine lives in
    zone: str = ""  # Placement.AvailabilityZone
    state_reason: str = ""  # StateTransitionReason: "User initiated (2026-11-21 14:00:05 GMT)" after a stop
    capacity_reservation_id: str = ""  # the On-Demand Capacity Reservation or Capacity Block it runs in
    tenancy: str = "default"  # Placement.Tenancy: "default", "dedicated" or "host"
    metadata_endpoint: str = "enabled"  # MetadataOptions.HttpEndpoint: "disabled" leaves the SSM agent no credentials

    @property
    def auto_scaling_group(self) -> str:
        return self.tags.get("aws:autoscaling:groupName", "")

    def owner(self, owner_tag_key: str) -> str:
        return self.tags.get(owner_tag_key, "").strip()

    @property
    def vcpu_count(self) -> int:
        """The vCPUs EC2 reported, else what the size of the type says; 0 if neither tells."""
        return self.vcpus or vcpus_of_type(self.instance_type)


def vcpus_of_type(instance_type: str) -> int:
    """vCPUs by the size in the type's name, as every accelerated family sizes them: large 2, xlarge 4,
    Nxlarge 4N (p4d.24xlarge 96, p5.48xlarge 192). 0 for a name that does not say (metal)."""
    size = instance_type.partition(".")[2]
    if size == "large":
        return 2
    if size.endswith("xlarge"):
        count = size.removesuffix("xlarge")
        if count == "":
            return 4
        if count.isdigit():
            return 4 * int(count)
    return 0


@dataclass(frozen=True)
class Skipped:
    """A well-formed event that costguard has nothing to do with, and why."""

    reason: str


@dataclass(frozen=True)
class Price:
    usd_per_hour: float | None
    source: str  # "pricing-api", "bundled", "unknown", or "bill" (what the bill loses: core/money.py)
    on_demand: float | None = None  # a price on the bill: the list price beside it

    def text(self) -> str:
        if self.usd_per_hour is None:
            return "price unknown"
        suffix = {"pricing-api": "", "bill": " on the bill"}.get(self.source, " (list price, approx.)")
        return f"${self.usd_per_hour:,.2f}/h{suffix}"


# Accelerated instance families a Reserved Instance can be for (the idle policy's defaults).
GPU_FAMILIES = ("p*", "g*", "trn*", "inf*", "dl*")


@dataclass(frozen=True)
class Commitment:
    """An active Reserved Instance purchase or Savings Plan."""

    kind: str  # "reserved-instance" or "savings-plan"
    commitment_id: str
    end: datetime
    start: datetime
    region: str = ""
    instance_type: str = ""
    count: int = 0
    scope: str = ""  # RI: Region or Availability Zone; SP: the plan type
    offering_class: str = ""  # RI: standard / convertible; SP: Compute / EC2Instance / SageMaker
    payment_option: str = ""
    hourly_commitment: float | None = None
    arn: str = ""

    @property
    def label(self) -> str:
        if self.kind == "reserved-instance":
            return f"{self.count} × {self.instance_type} Reserved Instance{'s' if self.count != 1 else ''}"
        commitment = f" (${self.hourly_commitment:,.2f}/h)" if self.hourly_commitment is not None else ""
        return f"{self.offering_class} Savings Plan{commitment}"

    @property
    def gpu(self) -> bool:
        return any(fnmatchcase(self.instance_type, f) for f in GPU_FAMILIES)

    def days_left(self, today: date) -> int:
        return (self.end.date() - today).days


@dataclass(frozen=True)
class Mover:
    key: str
    current: float
    previous: float

    @property
    def delta(self) -> float:
        return self.current - self.previous


@dataclass
class SpendPicture:
    month_to_date: float | None = None
    forecast_month: float | None = None
    by_service: list[Mover] = field(default_factory=list)
    by_instance_type: list[Mover] = field(default_factory=list)
    by_owner: list[Mover] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    by_sagemaker: list[Mover] = field(default_factory=list)  # SageMaker's usage types (ml.* hours, by what)


@dataclass
class Drivers:
    """Who drives a jump: spend by owner tag over [start, end) against as many days just before, in
    Cost Explorer, for `services` (all spend when empty). A failed call is named in `errors`."""

    start: date
    end: date
    services: tuple[str, ...] = ()
    by_owner: list[Mover] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def days(self) -> int:
        return (self.end - self.start).days
