"""The template as CloudFormation will see it: SAM-transformed, so generated roles are checked too."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from testing.template import template


class _NoManagedPolicies:
    """costguard attaches no AWS managed policy; if one appears, translation would need this to know it."""

    def load(self) -> dict[str, str]:
        return {}


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    return template()


@pytest.fixture(scope="session")
def cfn(sam_template: dict[str, Any]) -> dict[str, Any]:
    return transformed(sam_template, {"AlertsChannel": "C0ALERTS"})


@pytest.fixture(scope="session")
def cfn_untraced(sam_template: dict[str, Any]) -> dict[str, Any]:
    """The template deployed with Tracing=Disabled (SAM reads the parameter's value when it transforms)."""
    return transformed(sam_template, {"AlertsChannel": "C0ALERTS", "Tracing": "Disabled"})


def transformed(sam_template: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    doc = copy.deepcopy(sam_template)
    for resource in doc["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):  # local paths become S3 URIs at `sam package`
                props[key] = f"s3://bucket/{props[key]}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return transform(doc, parameters, _NoManagedPolicies())  # type: ignore[no-any-return]
