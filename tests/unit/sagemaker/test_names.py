"""SageMaker's names as AWS writes them: governed types, usage types, tag values."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from costguard.aws.costexplorer import sagemaker_usage
from costguard.core import tags
from tests.unit.sagemaker.resources import (
    POLICY,
)


def test_only_ml_types_of_the_accelerator_families_are_governed() -> None:
    assert POLICY.is_accelerated("ml.g5.xlarge")
    assert POLICY.is_accelerated("ml.p4d.24xlarge")
    assert not POLICY.is_accelerated("ml.m5.xlarge")
    assert not POLICY.is_accelerated("g5.xlarge")  # an EC2 type, not SageMaker's
    assert not POLICY.is_accelerated("system")


def test_sagemaker_usage_types_read_as_people_say_them() -> None:
    assert sagemaker_usage("USE1-Notebk:ml.g5.xlarge") == "ml.g5.xlarge notebook instances (USE1)"
    assert sagemaker_usage("EUW1-Host:ml.p4d.24xlarge") == "ml.p4d.24xlarge endpoints (EUW1)"
    assert sagemaker_usage("USE1-Studio-Notebk:ml.g5.2xlarge") == "ml.g5.2xlarge Studio apps (USE1)"
    assert sagemaker_usage("USE1-RealTimeInference-Storage") == "USE1-RealTimeInference-Storage"


@given(value=st.text(max_size=400))
def test_a_tag_value_costguard_writes_is_always_one_sagemaker_accepts(value: str) -> None:
    # Tag.Value: "Length Constraints: Maximum length of 256. Pattern: ([\p{L}\p{Z}\p{N}_.:/=+\-@]*)" (API
    # reference). A tab, a newline or another control character in a Slack name or a session name is not \p{Z}.
    written = tags.sagemaker_value(value)
    assert len(written) <= 256
    assert all(unicodedata.category(c)[0] in "LZN" or c in "_.:/=+-@" for c in written), repr(written)
    assert tags.sagemaker_value("alice\tsmith\n") == "alice_smith_"
    assert tags.sagemaker_value("Zoë O'Brien <zoe@example.com>") == "Zoë O_Brien _zoe@example.com_"
