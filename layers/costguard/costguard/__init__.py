"""costguard: governance of the EC2 spend of machine-learning teams.

The package is shipped as a Lambda layer and shared by every function. It keeps three kinds of code
apart so that data flows one way: adapters that read the world into plain records, pure decisions
over those records, and adapters that act and tell (see DESIGN.md).
"""

__version__ = "0.1.0"
