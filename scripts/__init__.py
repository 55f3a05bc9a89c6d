"""The operator's scripts, run through make: `make uninstall` (scripts/uninstall)."""
