"""`make uninstall`: remove costguard from an account, with what `sam delete` leaves and what costguard made at run
time (idle alarms, dashboards, `costguard:` tags, scale-in protection, its notebook lifecycle configuration).

A dry run unless told `--yes`: it lists what it would remove and what it keeps. It keeps, unless told
`--delete-data`, the state table and the trail bucket the stack retains, and the tags people set (an exemption, a
schedule, a keep): what people told costguard, and the ledger of what it did. It always keeps `Owner` tags and the
Slack secret, which are yours.
"""
