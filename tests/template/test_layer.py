"""The Lambda layer: built without dependency resolution (layers/costguard/Makefile, pip --no-deps), so its
requirements must name every package the layer needs, pinned, and nothing the runtime already has."""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from testing.handlers import ROOT

LAYER = ROOT / "layers" / "costguard"
# What the Lambda Python runtime carries: boto3 and its dependencies. Not shipped again in the layer.
RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}
# The Lambda runtime: python3.13 on arm64 (Amazon Linux 2023).
LAMBDA = {"python_version": "3.13", "python_full_version": "3.13.0", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "aarch64", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}  # fmt: skip


def pins() -> dict[str, str]:
    found = {}
    for raw in (LAYER / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{line}: every package of the layer is pinned"
            found[str(canonicalize_name(name))] = version
    return found


def test_the_layer_names_every_package_it_needs_and_the_tests_run_on_those_versions() -> None:
    pinned = pins()
    missing = {}
    for name, version in pinned.items():
        assert metadata.version(name) == version, f"{name}: the tests run on {metadata.version(name)}"
        for raw in metadata.requires(name) or []:
            needed = Requirement(raw)
            if needed.marker is not None and not needed.marker.evaluate(LAMBDA):
                continue  # an extra, or another Python's
            wanted = str(canonicalize_name(needed.name))
            if wanted not in pinned and wanted not in RUNTIME_PROVIDED:
                missing[name] = wanted
    assert missing == {}
    assert not {"boto3", "botocore"} & set(pinned)  # the runtime's own, never a second copy


def test_the_layer_is_built_for_the_lambda_runtime_without_resolving_dependencies(sam_template: dict[str, Any]) -> None:
    layer = sam_template["Resources"]["CostguardLayer"]
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    makefile = (LAYER / "Makefile").read_text()
    [install] = re.findall(r"^\t.*pip install.*$", makefile, flags=re.MULTILINE)
    for flag in ("--no-deps", "--only-binary=:all:", "--python-version 3.13", "--implementation cp"):
        assert flag in install or flag in makefile
    assert "manylinux_2_28_aarch64" in makefile
    assert "build-CostguardLayer:" in makefile
