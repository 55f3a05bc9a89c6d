"""One stand-in per AWS service where moto is not enough (too slow at scale, or not implemented), shared
by the tests, the demo and the benchmarks; each at least as strict as AWS about what costguard sends: a
request AWS would refuse is refused (ApiError, AWS's code), a request the stand-in does not understand
is refused too, never answered loosely."""
