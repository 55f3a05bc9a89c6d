"""The Pricing API's GetProducts, which moto does not implement, over a world's price table: EC2's Linux
on-demand products (shared tenancy, no pre-installed software, capacity used, no licence) and SageMaker's
products by usage type, in AWS's PriceList shape (JSON strings, FormatVersion aws_v1), at least as strict
as the Pricing API about what it is sent.

Kept as AWS keeps them: a ServiceCode it knows; TERM_MATCH filters only, every one of which a product must
match exactly (a filter on an attribute the product does not carry matches nothing); MaxResults 1 to 100
(100 unless asked) and NextToken. A query without the instance type is refused (the stand-in does not
list a whole service's catalogue). Every instance type asked is counted (`asked`).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from testing.aws.errors import ApiError, unsupported

MAX_RESULTS = 100
# The one EC2 product a price stands for: the attributes costguard's filters name.
EC2_PRODUCT = {
    "locationType": "AWS Region",
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}


class PriceTable(Protocol):
    def ec2(self, instance_type: str) -> Mapping[str, float]:
        """Region -> USD an hour of the type's Linux on-demand product ({} where the world prices none)."""
        ...

    def sagemaker(self, instance_name: str, region: str) -> Mapping[str, float]:
        """Usage type -> USD an hour of an ml.* type's products in one region."""
        ...


class NoPrices:
    """A world whose Pricing API answers nothing (costguard falls back to its bundled prices)."""

    def ec2(self, instance_type: str) -> Mapping[str, float]:
        return {}

    def sagemaker(self, instance_name: str, region: str) -> Mapping[str, float]:
        return {}


class Pricing:
    def __init__(self, table: PriceTable | None = None) -> None:
        self.table = table or NoPrices()
        self.asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    def get_products(self, params: Mapping[str, Any]) -> dict[str, Any]:
        size = int(params.get("MaxResults", MAX_RESULTS))
        if not 1 <= size <= MAX_RESULTS:
            raise ApiError("InvalidParameterException", f"MaxResults {size}: 1 to {MAX_RESULTS}")
        fields: dict[str, str] = {}
        for f in params.get("Filters") or []:
            if f.get("Type") != "TERM_MATCH":
                raise ApiError("InvalidParameterException", f"filter type {f.get('Type')!r}: TERM_MATCH only")
            fields[str(f["Field"])] = str(f["Value"])
        service = params.get("ServiceCode")
        if service == "AmazonEC2":
            products = self._ec2(fields)
        elif service == "AmazonSageMaker":
            products = self._sagemaker(fields)
        else:
            raise unsupported(f"GetProducts of {service!r}")
        start = 0
        if params.get("NextToken"):
            token = str(params["NextToken"])
            if not token.isdigit() or int(token) >= len(products):
                raise ApiError("InvalidNextTokenException", "The next token is invalid")
            start = int(token)
        out: dict[str, Any] = {"PriceList": products[start : start + size], "FormatVersion": "aws_v1"}
        if start + size < len(products):
            out["NextToken"] = str(start + size)
        return out

    def _ec2(self, fields: Mapping[str, str]) -> list[str]:
        instance_type = fields.get("instanceType")
        if instance_type is None:
            raise unsupported("GetProducts of AmazonEC2 without an instanceType filter")
        with self._lock:
            self.asked[instance_type] += 1
        products = []
        for region, usd in sorted(self.table.ec2(instance_type).items()):
            attributes = {
                **EC2_PRODUCT,
                "instanceType": instance_type,
                "regionCode": region,
                "servicecode": "AmazonEC2",
            }
            if all(attributes.get(k) == v for k, v in fields.items()):
                sku = "SB" + instance_type.replace(".", "").upper() + region.replace("-", "").upper()
                products.append(_product(sku, "AmazonEC2", attributes, usd))
        return products

    def _sagemaker(self, fields: Mapping[str, str]) -> list[str]:
        name, region = fields.get("instanceName"), fields.get("regionCode")
        if name is None or region is None:
            raise unsupported("GetProducts of AmazonSageMaker without instanceName and regionCode filters")
        with self._lock:
            self.asked[name] += 1
        products = []
        for usage, usd in sorted(self.table.sagemaker(name, region).items()):
            attributes = {
                "instanceName": name,
                "regionCode": region,
                "usagetype": usage,
                "servicecode": "AmazonSageMaker",
            }
            if all(attributes.get(k) == v for k, v in fields.items()):
                products.append(
                    _product("SM" + usage.replace(":", "").replace(".", "").upper(), "AmazonSageMaker", attributes, usd)
                )
        return products


def _product(sku: str, service: str, attributes: Mapping[str, str], usd: float) -> str:
    """One product as the PriceList carries it: a JSON string, its on-demand term's hourly price."""
    term = f"{sku}.JRTCKXETXF"
    on_demand = {
        term: {
            "priceDimensions": {
                f"{term}.6YS6EN2CT7": {
                    "unit": "Hrs",
                    "pricePerUnit": {"USD": f"{usd:.10f}"},
                    "description": f"${usd} per On Demand hour",
                }
            },
            "sku": sku,
        }
    }
    product = {"product": {"sku": sku, "attributes": dict(attributes)}, "serviceCode": service}
    return json.dumps({**product, "terms": {"OnDemand": on_demand}})
