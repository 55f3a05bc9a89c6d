"""The SageMaker rules: pure functions of resources, their series, the policy and `now` (no I/O, no clock)."""
