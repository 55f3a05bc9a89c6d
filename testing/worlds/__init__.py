"""Simulated accounts shared by the tests and the benchmarks: the sweep's fleet at scale (fleet), a week of
people and machines (week), the weekly digest's fortnight (digest), a payer's quarter and a hub's
organization (scheduled). Each is deterministic from its seed."""
