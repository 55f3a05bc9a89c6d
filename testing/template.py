"""What the tests, the demo and the benchmarks take from template.yaml (one source of truth): the resources
they create as it defines them, and each function's Lambda environment (`lambda_environment`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"


@cache
def template() -> dict[str, Any]:
    return yaml_parse(TEMPLATE.read_text())  # type: ignore[no-any-return]


def activity_check_script(system_services: str | None = None) -> str:
    """The activity check's script as the deployed document runs it: the template's `!Sub` filled with the
    SystemServices parameter (its default unless given)."""
    doc = template()["Resources"]["ActivityCheckDocument"]["Properties"]["Content"]
    [command] = doc["mainSteps"][0]["inputs"]["runCommand"]
    services = template()["Parameters"]["SystemServices"]["Default"] if system_services is None else system_services
    return str(command["Fn::Sub"]).replace("${SystemServices}", services)


def create_state_table(dynamodb: Any, name: str) -> None:
    """Create the StateTable with the template's keys and TTL."""
    props = template()["Resources"]["StateTable"]["Properties"]
    dynamodb.create_table(
        TableName=name,
        BillingMode=props["BillingMode"],
        AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"],
    )
    ttl = props["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": ttl["Enabled"]}
    )


def install_costguard(dynamodb: Any, secretsmanager: Any, env: Mapping[str, str], slack_secret: str) -> None:
    """What `sam deploy` and the operator set up: the state table, and the Slack secret by name."""
    create_state_table(dynamodb, env["STATE_TABLE"])
    secretsmanager.create_secret(Name=env["SLACK_SECRET_NAME"], SecretString=slack_secret)


# ---------------------------------------------------------------------- the Lambda environment
def _function_resource(function: str, tmpl: Mapping[str, Any]) -> Mapping[str, Any]:
    for resource in tmpl["Resources"].values():
        code = str(resource.get("Properties", {}).get("CodeUri", "")).rstrip("/")
        if resource.get("Type") == "AWS::Serverless::Function" and code == f"functions/{function}":
            return resource  # type: ignore[no-any-return]
    raise KeyError(f"no function in template.yaml has its code in functions/{function}")


class _Resolver:
    """`!Ref`, `!If`, `!GetAtt`, `!Equals`, `!And`, `!Or`, `!Not` and conditions, as CloudFormation resolves
    them at deploy time: a parameter by its value (given, or the template's default); a resource by the
    physical name or attribute given (absent: the variable is left out)."""

    class Absent(Exception):
        pass

    def __init__(self, tmpl: Mapping[str, Any], parameters: Mapping[str, str], resources: Mapping[str, str]) -> None:
        self.tmpl, self.parameters, self.resources = tmpl, parameters, resources

    def value(self, node: Any) -> str:
        if isinstance(node, bool):
            return "true" if node else "false"
        if isinstance(node, (str, int, float)):
            return str(node)
        [(kind, arg)] = node.items()
        if kind == "Ref":
            return self._ref(arg)
        if kind == "Fn::If":
            condition, yes, no = arg
            return self.value(yes if self.condition({"Condition": condition}) else no)
        if kind == "Fn::GetAtt":
            name = ".".join(arg) if isinstance(arg, list) else str(arg)
            if name not in self.resources:
                raise self.Absent(name)
            return self.resources[name]
        if kind == "Fn::Sub" and isinstance(arg, str):
            return re.sub(r"\$\{([A-Za-z0-9:]+)\}", lambda m: self._ref(m.group(1)), arg)
        raise ValueError(f"cannot resolve {kind} in a Lambda environment")

    def _ref(self, name: str) -> str:
        if name in self.parameters:
            return str(self.parameters[name])
        if name in self.tmpl.get("Parameters", {}):
            declared = self.tmpl["Parameters"][name]
            if "Default" not in declared:
                raise KeyError(f"the template's parameter {name} has no default: give it")
            return self.value(declared["Default"])
        if name.startswith("AWS::"):
            return {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws"}.get(name, "")
        if name not in self.resources:
            raise self.Absent(name)
        return self.resources[name]

    def condition(self, node: Any) -> bool:
        [(kind, arg)] = node.items()
        if kind == "Condition":
            return self.condition(self.tmpl["Conditions"][arg])
        if kind == "Fn::Equals":
            return self.value(arg[0]) == self.value(arg[1])
        if kind == "Fn::Not":
            return not self.condition(arg[0])
        if kind == "Fn::And":
            return all(self.condition(c) for c in arg)
        if kind == "Fn::Or":
            return any(self.condition(c) for c in arg)
        raise ValueError(f"cannot evaluate the condition {kind}")


def lambda_environment(
    function: str | None = None,
    parameters: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
    path: Path = TEMPLATE,
) -> dict[str, str]:
    """The environment `sam deploy` gives a function (`functions/<function>/`; None: the Globals alone), read
    from template.yaml: the Globals' variables and the function's, each `!Ref` to a parameter resolved to
    `parameters[name]` or else the parameter's default, each `!If` by the template's conditions. A variable
    that names a resource (the state table, a queue, the activity check's document) takes its physical name
    from `resources` (`{"StateTable": "costguard-state"}`, `{"FiguresQueue.Arn": ...}`), or is left out."""
    tmpl = template() if path == TEMPLATE else yaml_parse(path.read_text())
    resolver = _Resolver(tmpl, dict(parameters or {}), dict(resources or {}))
    variables = dict(tmpl.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    if function is not None:
        own = _function_resource(function, tmpl)["Properties"].get("Environment", {}).get("Variables", {})
        variables.update(own)
    env: dict[str, str] = {}
    for name, node in variables.items():
        try:
            env[name] = resolver.value(node)
        except _Resolver.Absent:
            continue
    return env
