"""A zone's name comes from outside (a person's Slack profile, a setting): whatever it is, a time is shown in
a real zone, never an exception at the message it is for."""

from __future__ import annotations

from costguard.core.formatting import zone_of


def test_a_zone_name_too_long_for_a_file_or_hostile_falls_back_to_the_default() -> None:
    assert zone_of("Europe/Paris").key == "Europe/Paris"
    assert zone_of("x" * 300).key == "UTC"  # ZoneInfo raises OSError (file name too long) on it
    assert zone_of("<mailto:a@evil.example|mail>" + "\x80" * 200, default="Asia/Kolkata").key == "Asia/Kolkata"
    assert zone_of("../../etc/passwd").key == "UTC"
    assert zone_of("").key == "UTC"
