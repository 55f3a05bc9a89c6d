"""The operator's scripts, run through make: `make first-deploy` (first_deploy.py), `make uninstall` (uninstall/)."""
