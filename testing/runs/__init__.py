"""Whole runs the tests and the benchmarks share: the week harness's handlers in a child process, and
the scheduled handlers run whole against the stand-ins (their measures and their calls' floors)."""
