"""costguard: governance of the EC2 spend of machine-learning teams.

The package is shipped as a Lambda layer and shared by every function. Its folders show the design
(docs/architecture.md tells it whole): `core` (settings, records, tag keys, formatting), `aws` (one
adapter per AWS service), `state` (the ledger and once-only delivery), `slack` (blocks, notifier,
signature, buttons), one package per feature (`owners`, `idle`, `budgets`, `commitments`, `digest`,
`buttons`), and `runtime`, what a handler wires together. Inside a feature, pure rules and message
builders are modules of their own, apart from the flows that read and act.
"""

__version__ = "0.1.0"
