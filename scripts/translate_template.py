"""`make org-template`: template.yaml as plain CloudFormation, for a service-managed StackSet.

StackSets with service-managed permissions refuse a template that declares a transform, and template.yaml is SAM.
This runs the SAM translator (the library `sam deploy` hands the template to CloudFormation for, pinned in
requirements-org.txt) offline, after pointing every function's code and the layer at the artifact bucket of the
region the stack runs in: `${ArtifactBucketPrefix}-${AWS::Region}`, keys under `ArtifactKeyPrefix` (one prefix per
release, so that a new release changes the keys and CloudFormation updates the code). `make org-deploy` publishes
the zips there; scripts/org/artifact-bucket.yaml is the bucket, readable by the organization's accounts only.

SAM resolves a few properties when it translates, not when the stack is made: of costguard's, only `Tracing`
(Globals), which decides whether a role gets X-Ray's write-only policy. The translation is made with Active and
then both the tracing config and that policy are put under the template's own TracingOn condition, so the
StackSet's Tracing parameter does what `sam deploy`'s does.

    python -m scripts.translate_template [--output .aws-sam/org/template.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
OUTPUT = ROOT / ".aws-sam" / "org" / "template.json"
BUCKET = {"Fn::Sub": "${ArtifactBucketPrefix}-${AWS::Region}"}
XRAY_POLICY = ":iam::aws:policy/AWSXrayWriteOnlyAccess"
# Resources SAM generates carry none of the SAM resource's Metadata; the checks they do not pass, with why.
GENERATED_SKIPS: dict[str, list[dict[str, str]]] = {
    "AWS::Lambda::Url": [
        {
            "id": "CKV_AWS_258",
            "comment": "Slack cannot sign AWS requests: the receiver checks each request with Slack's signing secret.",
        }
    ],
}

ARTIFACT_PARAMETERS: dict[str, dict[str, Any]] = {
    "ArtifactBucketPrefix": {
        "Type": "String",
        # An S3 bucket name is at most 63 characters; the region's name (up to 14) and a dash follow the prefix.
        "AllowedPattern": "^[a-z0-9][a-z0-9.-]{1,47}$",
        "Description": (
            "The organization's artifact buckets: <prefix>-<region> in every region of the StackSet holds the "
            "functions' code and the layer (scripts/org/artifact-bucket.yaml, readable by the organization only)."
        ),
    },
    "ArtifactKeyPrefix": {
        "Type": "String",
        "AllowedPattern": "^[A-Za-z0-9._/-]{1,200}$",
        "Description": (
            "The release's folder in the artifact buckets (costguard/<commit>): a new release under a new prefix "
            "is what makes CloudFormation update the functions' code and the layer."
        ),
    },
}


class _NoManagedPolicies:
    """costguard attaches no AWS managed policy by name; if one appears, translation would need this to know it."""

    def load(self) -> dict[str, str]:
        return {}


def artifact_key(local_path: str) -> str:
    """Where `make org-deploy` puts a code folder's zip: functions/idle_stopper/ -> functions/idle_stopper.zip."""
    return local_path.strip("/") + ".zip"


def code_locations(sam: dict[str, Any]) -> dict[str, str]:
    """Each function's and layer's logical ID -> its artifact key (what `sam build` makes a folder of)."""
    locations = {}
    for logical_id, resource in sam["Resources"].items():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):
                locations[logical_id] = artifact_key(props[key])
    return locations


def organization_template(sam: dict[str, Any]) -> dict[str, Any]:
    """The SAM template `sam` as plain CloudFormation whose code is read from the region's artifact bucket."""
    doc = copy.deepcopy(sam)
    doc["Parameters"].update(copy.deepcopy(ARTIFACT_PARAMETERS))
    for logical_id, key in code_locations(sam).items():
        props = doc["Resources"][logical_id]["Properties"]
        uri = "CodeUri" if "CodeUri" in props else "ContentUri"
        props[uri] = {"Bucket": BUCKET, "Key": {"Fn::Sub": "${ArtifactKeyPrefix}/" + key}}
    previous = os.environ.get("AWS_DEFAULT_REGION")
    # The translator asks for a region only to spell ARNs' partitions (as `sam deploy`'s own transform does).
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    try:
        cfn: dict[str, Any] = transform(doc, {"Tracing": "Active"}, _NoManagedPolicies())
    finally:
        if previous is None:
            os.environ.pop("AWS_DEFAULT_REGION", None)
    for resource in cfn["Resources"].values():
        _tracing_by_condition(resource)
        resource_type = resource["Type"]
        if resource_type in GENERATED_SKIPS:
            skips = resource.setdefault("Metadata", {}).setdefault("checkov", {}).setdefault("skip", [])
            skips.extend(copy.deepcopy(GENERATED_SKIPS[resource_type]))
    groups = cfn.get("Metadata", {}).get("AWS::CloudFormation::Interface", {}).get("ParameterGroups", [])
    groups.append({"Label": {"default": "Artifacts (the organization's)"}, "Parameters": list(ARTIFACT_PARAMETERS)})
    return cfn


def _tracing_by_condition(resource: dict[str, Any]) -> None:
    """What SAM decided from Tracing=Active, made to follow the stack's own Tracing parameter (TracingOn)."""
    props = resource.get("Properties", {})
    if resource["Type"] == "AWS::Lambda::Function" and "TracingConfig" in props:
        props["TracingConfig"] = {"Fn::If": ["TracingOn", props["TracingConfig"], {"Ref": "AWS::NoValue"}]}
    if resource["Type"] == "AWS::IAM::Role" and "ManagedPolicyArns" in props:
        props["ManagedPolicyArns"] = [
            {"Fn::If": ["TracingOn", arn, {"Ref": "AWS::NoValue"}]} if str(arn).endswith(XRAY_POLICY) else arn
            for arn in props["ManagedPolicyArns"]
        ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    cfn = organization_template(yaml_parse(TEMPLATE.read_text()))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(cfn, indent=1, sort_keys=False) + "\n")
    functions = sum(1 for r in cfn["Resources"].values() if r["Type"] == "AWS::Lambda::Function")
    print(f"{args.output}: {len(cfn['Resources'])} resources, {functions} functions, no transform")
    return 0


if __name__ == "__main__":
    sys.exit(main())
