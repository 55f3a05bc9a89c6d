"""On-demand hourly prices: the AWS Pricing API first, a bundled table of common GPU types as fallback.

Prices are looked up only for instances costguard talks about (a warning, a stop), cached for the
container's life. The fallback is said to be one in every message that uses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from costguard.aws.clients import READ_ERRORS
from costguard.core.observability import logger
from costguard.core.records import Price

if TYPE_CHECKING:
    from mypy_boto3_pricing import PricingClient

# Approximate us-east-1 Linux on-demand list prices (USD per hour) of common accelerated types, for when
# the Pricing API cannot be reached. The API's answer always wins.
BUNDLED_USD_PER_HOUR: dict[str, float] = {
    "p3.2xlarge": 3.06,
    "p3.8xlarge": 12.24,
    "p3.16xlarge": 24.48,
    "p4d.24xlarge": 21.96,
    "p5.48xlarge": 55.04,
    "g4dn.xlarge": 0.526,
    "g4dn.2xlarge": 0.752,
    "g4dn.4xlarge": 1.204,
    "g4dn.8xlarge": 2.176,
    "g4dn.12xlarge": 3.912,
    "g4dn.16xlarge": 4.352,
    "g5.xlarge": 1.006,
    "g5.2xlarge": 1.212,
    "g5.4xlarge": 1.624,
    "g5.8xlarge": 2.448,
    "g5.12xlarge": 5.672,
    "g5.16xlarge": 4.096,
    "g5.24xlarge": 8.144,
    "g5.48xlarge": 16.288,
    "g6.xlarge": 0.8048,
    "g6.2xlarge": 0.9776,
    "g6.4xlarge": 1.3232,
    "g6.8xlarge": 2.0144,
    "g6.12xlarge": 4.6016,
    "g6.16xlarge": 3.3968,
    "g6.24xlarge": 6.6752,
    "g6.48xlarge": 13.3504,
    "inf2.xlarge": 0.7582,
    "inf2.8xlarge": 1.9679,
    "inf2.24xlarge": 6.4906,
    "inf2.48xlarge": 12.9813,
    "trn1.2xlarge": 1.3438,
    "trn1.32xlarge": 21.50,
    "dl1.24xlarge": 13.109,
}


# Approximate us-east-1 SageMaker on-demand list prices (USD per hour) of common ml.* GPU types, for when the
# Pricing API cannot be reached (real-time inference; notebook and Studio prices are close to these).
BUNDLED_SAGEMAKER_USD_PER_HOUR: dict[str, float] = {
    "ml.g4dn.xlarge": 0.7364,
    "ml.g4dn.2xlarge": 0.94,
    "ml.g5.xlarge": 1.408,
    "ml.g5.2xlarge": 1.515,
    "ml.g5.12xlarge": 7.09,
    "ml.g5.24xlarge": 10.18,
    "ml.g5.48xlarge": 20.36,
    "ml.g6.2xlarge": 1.222,
    "ml.inf2.xlarge": 0.99,
    "ml.p3.2xlarge": 3.825,
    "ml.p4d.24xlarge": 37.688,
    "ml.p5.48xlarge": 113.068,
}

# What a SageMaker usage type says a price is for ("USE1-Notebk:ml.g5.xlarge", "USE1-Host:ml.g5.xlarge",
# "USE1-Studio…:ml.g5.xlarge"): the Pricing API's AmazonSageMaker products carry it as `usagetype`.
SAGEMAKER_USAGE = {"notebook": "-Notebk:", "endpoint": "-Host:", "app": "-Studio"}


class PriceBook:
    def __init__(self, client: PricingClient | None) -> None:
        self.client = client
        self._cache: dict[tuple[str, str], Price] = {}
        self._everywhere: dict[str, dict[str, float]] = {}  # a type's prices in every region, once read
        self.api_calls = 0
        self._sagemaker: dict[tuple[str, str], dict[str, float]] = {}

    def sagemaker_hourly(self, instance_type: str, region: str, kind: str) -> Price:
        """The on-demand hourly price of an ml.* type in a region for a notebook instance, an endpoint's
        instance or a Studio app (`kind`), from one GetProducts answer per type and region; a Studio price
        the answer lacks is the notebook price, said to be approximate."""
        usage = self._sagemaker_usage(instance_type, region)
        exact = _priced(usage, SAGEMAKER_USAGE.get(kind, ""))
        if exact is not None:
            return Price(exact, "pricing-api")
        near = _priced(usage, SAGEMAKER_USAGE["notebook"]) if kind == "app" else None
        if near is not None:
            return Price(near, "bundled")  # approximate: said so wherever it is shown
        bundled = BUNDLED_SAGEMAKER_USD_PER_HOUR.get(instance_type)
        return Price(bundled, "bundled" if bundled is not None else "unknown")

    def _sagemaker_usage(self, instance_type: str, region: str) -> dict[str, float]:
        """usage type -> USD per hour, for every AmazonSageMaker product of this type in this region."""
        key = (instance_type, region)
        if key in self._sagemaker or self.client is None:
            return self._sagemaker.get(key, {})
        params: dict[str, Any] = {
            "ServiceCode": "AmazonSageMaker",
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            ],
            "MaxResults": 100,
        }
        try:
            found = self._on_demand_by(self.client, params, "usagetype")
        except READ_ERRORS as exc:
            logger.warning("pricing API unavailable for SageMaker", instance_type=instance_type, error=str(exc))
            return {}
        self._sagemaker[key] = found
        return found

    def _products(self, client: PricingClient, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every product of a GetProducts query, page after page (each page counted in api_calls)."""
        while True:
            self.api_calls += 1
            response = client.get_products(**params)
            for raw in response.get("PriceList", []):
                yield json.loads(raw) if isinstance(raw, str) else raw
            token = response.get("NextToken")
            if not token:
                return
            params = {**params, "NextToken": token}

    def _on_demand_by(self, client: PricingClient, params: dict[str, Any], attribute: str) -> dict[str, float]:
        """The on-demand USD per hour of every product of a GetProducts query, by one of its attributes
        (products without that attribute or a price left out)."""
        found: dict[str, float] = {}
        for product in self._products(client, params):
            key = str(product.get("product", {}).get("attributes", {}).get(attribute, ""))
            price = on_demand_usd([product])
            if key and price:
                found[key] = price
        return found

    def hourly(self, instance_type: str, region: str) -> Price:
        key = (instance_type, region)
        if key not in self._cache:
            self._cache[key] = self._lookup(instance_type, region)
        return self._cache[key]

    def across_regions(self, instance_type: str) -> dict[str, float]:
        """The type's Linux on-demand price in every AWS Region that offers it (Local Zones left out),
        from the Pricing API's pages; {} when the API cannot be read. Each region's price is kept for hourly(),
        and the answer for the next region that asks about the same type (an answer that failed is asked again)."""
        if instance_type in self._everywhere:
            return dict(self._everywhere[instance_type])
        if self.client is None:
            return {}
        params: dict[str, Any] = {
            "ServiceCode": "AmazonEC2",
            "Filters": _filters(instance_type, "locationType", "AWS Region"),
            "MaxResults": 100,
        }
        try:
            prices = self._on_demand_by(self.client, params, "regionCode")
        except READ_ERRORS as exc:
            logger.warning("pricing API unavailable for region prices", instance_type=instance_type, error=str(exc))
            return {}
        for region, price in prices.items():
            self._cache.setdefault((instance_type, region), Price(price, "pricing-api"))
        self._everywhere[instance_type] = dict(prices)
        return prices

    def _lookup(self, instance_type: str, region: str) -> Price:
        if self.client is not None:
            try:
                self.api_calls += 1
                response = self.client.get_products(
                    ServiceCode="AmazonEC2",
                    Filters=_filters(instance_type, "regionCode", region),
                    MaxResults=10,
                )
                price = on_demand_usd(response.get("PriceList", []))
                if price is not None:
                    return Price(price, "pricing-api")
                logger.warning("no on-demand price in Pricing API answer", instance_type=instance_type, region=region)
            except READ_ERRORS as exc:
                logger.warning("pricing API unavailable, using bundled prices", error=str(exc))
        bundled = BUNDLED_USD_PER_HOUR.get(instance_type)
        return Price(bundled, "bundled" if bundled is not None else "unknown")


def _priced(usage: dict[str, float], marker: str) -> float | None:
    return next((usd for name, usd in sorted(usage.items()) if marker and marker in name), None)


def _filters(instance_type: str, place: str, where: str) -> list[Any]:
    """GetProducts filters for the Linux, shared-tenancy, no-software, on-demand product of a type, in
    one place (`regionCode`), or in every place of a kind (`locationType` "AWS Region")."""
    terms = [
        ("instanceType", instance_type),
        (place, where),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"),
        ("licenseModel", "No License required"),
    ]
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in terms]


def on_demand_usd(price_list: list[Any]) -> float | None:
    """The hourly USD on-demand price in a GetProducts PriceList (JSON strings), or None."""
    for raw in price_list:
        product = json.loads(raw) if isinstance(raw, str) else raw
        for term in (product.get("terms", {}).get("OnDemand") or {}).values():
            for dimension in (term.get("priceDimensions") or {}).values():
                usd = (dimension.get("pricePerUnit") or {}).get("USD")
                if dimension.get("unit") == "Hrs" and usd is not None and float(usd) > 0:
                    return float(usd)
    return None
