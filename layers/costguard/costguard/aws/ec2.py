"""EC2 adapter: reads instances and volumes into records, writes tags. Takes its client.

Writes honour the mode: in dry-run nothing is sent and the call reports that it was not applied.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from sys import intern
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.core.records import Instance
from costguard.core.settings import Mode

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ec2.type_defs import FilterTypeDef

# DescribeInstances returns at most 1,000 instances a page; CreateTags takes up to 1,000 resources per
# call, but AWS recommends smaller batches, so tags are written (and instances stopped) 500 at a time.
DESCRIBE_PAGE = 1000
TAG_BATCH = 500
LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True)
class Volume:
    volume_id: str
    instance_id: str
    tags: Mapping[str, str]


def tag_dict(raw: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    # Interned: keys and most values (owners, teams) repeat over a fleet, which is held whole by the digest.
    return {intern(str(t["Key"])): intern(str(t.get("Value", ""))) for t in raw or []}


def instance_from_api(raw: Mapping[str, Any], region: str, account: str = "") -> Instance:
    launch = raw["LaunchTime"]
    if isinstance(launch, str):
        launch = datetime.fromisoformat(launch)
    volumes = tuple(
        bdm["Ebs"]["VolumeId"] for bdm in raw.get("BlockDeviceMappings") or [] if bdm.get("Ebs", {}).get("VolumeId")
    )
    return Instance(
        instance_id=raw["InstanceId"],
        region=region,
        instance_type=intern(raw["InstanceType"]),  # the repeated ones interned: see tag_dict
        state=intern(raw["State"]["Name"]),
        launch_time=launch,
        tags=tag_dict(raw.get("Tags")),
        volume_ids=volumes,
        root_device_type=intern(raw.get("RootDeviceType", "ebs")),
        lifecycle=intern(raw.get("InstanceLifecycle", "")),
        spot_request_id=raw.get("SpotInstanceRequestId", ""),
        hibernation_configured=bool((raw.get("HibernationOptions") or {}).get("Configured")),
        platform=intern(raw.get("PlatformDetails", "")),
        private_dns_name=raw.get("PrivateDnsName", ""),
        vcpus=_vcpus(raw.get("CpuOptions")),
        account=intern(account),
        zone=intern(str((raw.get("Placement") or {}).get("AvailabilityZone", ""))),
        state_reason=str(raw.get("StateTransitionReason") or ""),
        capacity_reservation_id=str(raw.get("CapacityReservationId") or ""),
        tenancy=intern(str((raw.get("Placement") or {}).get("Tenancy") or "default")),
        metadata_endpoint=intern(str((raw.get("MetadataOptions") or {}).get("HttpEndpoint") or "enabled")),
    )


def _price(text: Any) -> float:
    """A price EC2 gave as text; 0 (no price) for anything that is not a finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _vcpus(options: Any) -> int:
    if not isinstance(options, Mapping):
        return 0
    cores, threads = options.get("CoreCount"), options.get("ThreadsPerCore")
    return cores * threads if isinstance(cores, int) and isinstance(threads, int) else 0


@dataclass(frozen=True)
class WriteResult:
    applied: bool
    error: BaseException | None = None  # the call failed: a later run must try again


def write_in_batches(
    resource_ids: Sequence[str],
    write: Callable[[list[str]], bool],
    *,
    alone: Callable[[str], bool] | None = None,
) -> dict[str, WriteResult]:
    """One write per TAG_BATCH resources, in id order; for a batch AWS refuses, one write per resource
    (`alone`, when given, else the same write), so that one refusal costs no one else their write.

    AWS checks every resource of a StopInstances or CreateTags call before acting on any: one exempt,
    terminated or foreign resource fails the whole call.
    """
    ordered = sorted(set(resource_ids))
    results: dict[str, WriteResult] = {}
    for start in range(0, len(ordered), TAG_BATCH):
        chunk = ordered[start : start + TAG_BATCH]
        try:
            results.update(dict.fromkeys(chunk, WriteResult(write(chunk))))
            continue
        except (ClientError, BotoCoreError):
            pass
        for resource_id in chunk:
            try:
                results[resource_id] = WriteResult(alone(resource_id) if alone else write([resource_id]))
            except (ClientError, BotoCoreError) as exc:
                results[resource_id] = WriteResult(False, exc)
    return results


# What DescribeInstances answers for an id that names no instance (any more).
GONE = {"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"}


class Ec2:
    def __init__(self, client: EC2Client, region: str, mode: Mode) -> None:
        self.client = client
        self.region = region
        self.mode = mode

    def describe(self, instance_ids: Sequence[str]) -> list[Instance]:
        """These instances as they are now; one that no longer exists (terminated long ago, or never
        did) is simply not in the answer."""
        if not instance_ids:
            return []
        try:
            return list(self._walk({"InstanceIds": list(instance_ids)}))
        except ClientError as exc:
            if error_code(exc) not in GONE:
                raise
        if len(instance_ids) == 1:
            return []
        # One of several is gone: ask for each, so the others are still seen.
        return [found for iid in instance_ids for found in self.describe([iid])]

    def iter_instances(self, filters: Sequence[FilterTypeDef] = ()) -> Iterator[Instance]:
        """Every instance matching server-side filters, 1,000 a page."""
        return self._walk({"Filters": list(filters), "MaxResults": DESCRIBE_PAGE})

    def _walk(self, params: dict[str, Any]) -> Iterator[Instance]:
        paginator = self.client.get_paginator("describe_instances")
        for page in paginator.paginate(**params):
            for reservation in page.get("Reservations", []):
                for raw in reservation.get("Instances", []):
                    yield instance_from_api(raw, self.region, str(reservation.get("OwnerId") or ""))

    def iter_attached_volumes(self) -> Iterator[Volume]:
        paginator = self.client.get_paginator("describe_volumes")
        pages = paginator.paginate(
            Filters=[{"Name": "attachment.status", "Values": ["attached"]}], PaginationConfig={"PageSize": 500}
        )
        for page in pages:
            for raw in page.get("Volumes", []):
                attachments = raw.get("Attachments") or []
                if attachments:
                    yield Volume(raw["VolumeId"], attachments[0].get("InstanceId", ""), tag_dict(raw.get("Tags")))

    def describe_volumes(self, volume_ids: Sequence[str]) -> list[Volume]:
        if not volume_ids:
            return []
        response = self.client.describe_volumes(VolumeIds=list(volume_ids))
        return [
            Volume(
                raw["VolumeId"], (raw.get("Attachments") or [{}])[0].get("InstanceId", ""), tag_dict(raw.get("Tags"))
            )
            for raw in response.get("Volumes", [])
        ]

    def spot_request_types(self, request_ids: Sequence[str]) -> dict[str, str]:
        """Spot request id → "one-time" or "persistent" (only persistent Spot instances can be stopped)."""
        if not request_ids:
            return {}
        response = self.client.describe_spot_instance_requests(SpotInstanceRequestIds=sorted(set(request_ids)))
        return {r["SpotInstanceRequestId"]: r.get("Type", "one-time") for r in response.get("SpotInstanceRequests", [])}

    def spot_prices(self, wanted: Iterable[tuple[str, str]], at: datetime) -> dict[tuple[str, str], float]:
        """The Linux Spot price in effect at `at` of each (instance type, Availability Zone): one
        DescribeSpotPriceHistory call per type; a pair EC2 has no price for is left out."""
        by_type: dict[str, set[str]] = {}
        for instance_type, zone in wanted:
            by_type.setdefault(instance_type, set()).add(zone)
        prices: dict[tuple[str, str], float] = {}
        for instance_type, zones in sorted(by_type.items()):
            answer = self.client.describe_spot_price_history(
                InstanceTypes=[instance_type],  # type: ignore[list-item]
                ProductDescriptions=["Linux/UNIX"],
                StartTime=at,
                EndTime=at,
            )
            newest: dict[str, tuple[datetime, float]] = {}
            for row in answer.get("SpotPriceHistory", []):
                zone, stamp = row.get("AvailabilityZone", ""), row.get("Timestamp")
                if stamp is None or zone not in zones or row.get("InstanceType") != instance_type:
                    continue
                if zone not in newest or stamp > newest[zone][0]:
                    newest[zone] = (stamp, _price(row.get("SpotPrice")))
            prices.update({(instance_type, z): p for z, (_, p) in newest.items() if p > 0})
        return prices

    def stop(self, instance_ids: Sequence[str], *, hibernate: bool) -> bool:
        """Stop (or hibernate) instances in one call; False in dry-run, when nothing is sent.

        AWS checks every instance before stopping any: one refusal (state, permission) fails the call.
        """
        if not self.mode.mutates:
            return False
        self.client.stop_instances(InstanceIds=list(instance_ids), Hibernate=hibernate)
        return True

    def start(self, instance_id: str) -> bool:
        if not self.mode.mutates:
            return False
        self.client.start_instances(InstanceIds=[instance_id])
        return True

    def delete_tags(self, resource_ids: Sequence[str], keys: Sequence[str]) -> bool:
        if not resource_ids or not keys:
            return True
        if not self.mode.mutates:
            return False
        for start in range(0, len(resource_ids), TAG_BATCH):
            self.client.delete_tags(
                Resources=list(resource_ids[start : start + TAG_BATCH]), Tags=[{"Key": k} for k in keys]
            )
        return True

    def create_tags(self, resource_ids: Sequence[str], tags: Mapping[str, str]) -> bool:
        """Tag resources; returns False (and sends nothing) in dry-run."""
        if not resource_ids or not tags:
            return True
        if not self.mode.mutates:
            return False
        tag_list = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        for start in range(0, len(resource_ids), TAG_BATCH):
            self.client.create_tags(Resources=list(resource_ids[start : start + TAG_BATCH]), Tags=tag_list)  # type: ignore[arg-type]
        return True
