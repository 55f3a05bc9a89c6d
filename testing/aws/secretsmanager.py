"""Secrets Manager's GetSecretValue for the stand-ins' worlds (moto serves the tests and the demo): a secret
is answered by its name or its ARN, and one that does not exist is refused (ResourceNotFoundException),
as Secrets Manager refuses it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from testing.aws.errors import ApiError

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:{name}"


class SecretsManager:
    def __init__(self, secrets: Mapping[str, str]) -> None:
        self.secrets = dict(secrets)

    def get_secret_value(self, params: Mapping[str, Any]) -> dict[str, Any]:
        asked = str(params.get("SecretId", ""))
        name = next((n for n in self.secrets if asked in (n, ARN.format(name=n))), None)
        if name is None:
            raise ApiError("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
        return {"ARN": ARN.format(name=name), "Name": name, "SecretString": self.secrets[name],
                "VersionId": "v1", "CreatedDate": time.time()}  # fmt: skip
