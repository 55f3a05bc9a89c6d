"""What each region's Savings Plans and Reserved Instances leave billed on demand, by quarter-hour of the week
(`core.bill.SpillProfile`): one `spill#<region>` item a region, learned from the spill each sweep that priced
on the bill found then, and read by the next sweeps to price a stop over the hours it keeps its machine off.
Its size is bounded: a week of quarter-hours (672) for at most MAX_LAYERS plan layers and RI pools, each a
string of numbers. Two sweeps of one region writing at once: the last one's quarter-hour stands (a slot a week)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from costguard.core.bill import WEEK_SLOTS, SpillProfile
from costguard.core.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=40)  # a region no longer swept drops its profile


class SpillLog:
    """A read or a write that fails raises (the sweep logs it and prices on this hour); an item that does not
    read as a profile is ignored and logged."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def read(self, region: str) -> SpillProfile | None:
        """The region's profile, or None: none kept yet, or one that cannot be read (logged)."""
        found = self.client.get_item(TableName=self.table, Key=_key(region), ConsistentRead=True).get("Item")
        if found is None:
            return None
        profile = _profile(region, found)
        if profile is None:
            logger.warning("spill profile unreadable: ignored", region=region)
        return profile

    def write(self, profile: SpillProfile, now: datetime) -> None:
        layers = {key: {"S": ",".join(_number(v) for v in slots)} for key, slots in sorted(profile.layers.items())}
        self.client.put_item(
            TableName=self.table,
            Item={
                **_key(profile.region),
                "l": {"M": layers},
                "expires_at": {"N": str(int((now + KEEP).timestamp()))},
            },
        )


def _key(region: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"spill#{region}"}, "sk": {"S": "profile"}}


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _profile(region: str, item: Mapping[str, object]) -> SpillProfile | None:
    try:
        layers = {}
        for key, value in item["l"]["M"].items():  # type: ignore[index]
            slots = tuple(float(v) if v else None for v in str(value["S"]).split(","))
            if len(slots) != WEEK_SLOTS:
                return None
            layers[str(key)] = slots
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return SpillProfile(region, layers)
