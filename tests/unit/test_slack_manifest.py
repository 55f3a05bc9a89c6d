"""slack-app-manifest.yaml asks for exactly the bot scopes costguard's Slack calls need.

The calls are read from the code: every call of a slack_sdk WebClient method (and every `api_call("…")`)
in the library and the handlers, each resolved to the Web API methods it makes from slack_sdk's own
source (`files_upload_v2` makes files.getUploadURLExternal and files.completeUploadExternal). Each Web API
method's bot scopes come from Slack's reference, https://docs.slack.dev/reference/methods/<method>
("Facts → Scopes → Bot token"). A Slack call the table does not know fails the test: add its method with
its documented scopes.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_sdk import WebClient

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "slack-app-manifest.yaml"
CODE = [ROOT / "layers" / "costguard" / "costguard", ROOT / "functions"]

# Web API method → the bot scopes costguard needs for it, from each method's reference page. Where Slack
# documents one scope per kind of conversation, costguard needs those of public and private channels
# (its alerts and digest channels may be either): the `channels:` and `groups:` ones.
SCOPES: dict[str, frozenset[str]] = {
    "chat.postMessage": frozenset({"chat:write"}),
    "chat.update": frozenset({"chat:write"}),
    "chat.delete": frozenset({"chat:write"}),
    "chat.postEphemeral": frozenset({"chat:write"}),
    "chat.scheduleMessage": frozenset({"chat:write"}),
    "chat.meMessage": frozenset({"chat:write"}),
    "chat.getPermalink": frozenset(),
    # users:read.email "must be requested at the same time as users:read"
    # (https://docs.slack.dev/reference/scopes/users.read.email)
    "users.lookupByEmail": frozenset({"users:read.email", "users:read"}),
    # costguard reads each member's profile email from users.list, which Slack returns only with
    # users:read.email (the same page)
    "users.list": frozenset({"users:read", "users:read.email"}),
    "users.info": frozenset({"users:read"}),
    "users.profile.get": frozenset({"users.profile:read"}),
    "usergroups.users.list": frozenset({"usergroups:read"}),
    "usergroups.list": frozenset({"usergroups:read"}),
    "files.getUploadURLExternal": frozenset({"files:write"}),
    "files.completeUploadExternal": frozenset({"files:write"}),
    "files.upload": frozenset({"files:write"}),
    "files.info": frozenset({"files:read"}),
    # costguard reads the history of its own direct messages too (a post whose answer was lost, looked
    # for before it is sent again): im:history as well
    "conversations.history": frozenset({"channels:history", "groups:history", "im:history"}),
    "conversations.replies": frozenset({"channels:history", "groups:history"}),
    "conversations.info": frozenset({"channels:read", "groups:read"}),
    "conversations.list": frozenset({"channels:read", "groups:read"}),
    "conversations.members": frozenset({"channels:read", "groups:read"}),
    "conversations.join": frozenset({"channels:join"}),
    "conversations.open": frozenset({"im:write"}),
    "reactions.add": frozenset({"reactions:write"}),
    "reactions.get": frozenset({"reactions:read"}),
    "pins.add": frozenset({"pins:write"}),
    "team.info": frozenset({"team:read"}),
    "bots.info": frozenset({"users:read"}),
    "emoji.list": frozenset({"emoji:read"}),
    "auth.test": frozenset(),
    "views.open": frozenset(),
    "views.update": frozenset(),
    "views.publish": frozenset(),
}

WEB_METHODS = {
    name
    for name in dir(WebClient)
    if not name.startswith("_") and name != "api_call" and callable(getattr(WebClient, name))
}


def api_methods(python_name: str) -> set[str]:
    """The Web API methods one WebClient method makes, read from slack_sdk's source."""
    source = inspect.getsource(getattr(WebClient, python_name))
    found = set(re.findall(r'api_call\(\s*"([\w.]+)"', source))
    for inner in set(re.findall(r"self\.(\w+)\(", source)) & WEB_METHODS - {python_name}:
        found |= api_methods(inner)
    return found


def slack_calls(source: str) -> set[str]:
    """The Web API methods a module's code calls through a WebClient."""
    calls: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr in WEB_METHODS:
            calls |= api_methods(node.func.attr)
        elif node.func.attr == "api_call" and node.args and isinstance(node.args[0], ast.Constant):
            calls.add(str(node.args[0].value))
    return calls


def code_slack_calls() -> set[str]:
    return {call for folder in CODE for path in folder.rglob("*.py") for call in slack_calls(path.read_text())}


def needed_scopes(methods: Iterable[str]) -> set[str]:
    unknown = sorted(set(methods) - set(SCOPES))
    assert unknown == [], f"add {unknown} to SCOPES with the bot scopes docs.slack.dev/reference/methods gives"
    return {scope for method in methods for scope in SCOPES[method]}


def scope_problems(manifest: dict[str, Any], methods: Iterable[str]) -> list[str]:
    asked = set(manifest["oauth_config"]["scopes"]["bot"])
    needed = needed_scopes(methods)
    return [f"missing {scope}" for scope in sorted(needed - asked)] + [
        f"not needed {scope}" for scope in sorted(asked - needed)
    ]


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return loaded


def test_the_code_makes_the_slack_calls_it_is_known_for() -> None:
    calls = code_slack_calls()

    # the warnings' channel posts and direct messages, the owners found by email, the digests' charts
    assert {"chat.postMessage", "users.lookupByEmail", "files.completeUploadExternal"} <= calls


def test_the_manifest_asks_for_exactly_the_bot_scopes_the_code_needs() -> None:
    assert scope_problems(manifest(), code_slack_calls()) == []


@pytest.mark.parametrize("scope", manifest()["oauth_config"]["scopes"]["bot"])
def test_a_manifest_without_one_of_its_scopes_is_refused(scope: str) -> None:
    cut = manifest()
    cut["oauth_config"]["scopes"]["bot"].remove(scope)

    assert scope_problems(cut, code_slack_calls()) == [f"missing {scope}"]


def test_a_new_slack_call_is_read_from_the_code_with_the_scopes_it_needs() -> None:
    source = (
        "def tell(web, client):\n"
        "    web.chat_update(channel='C1', ts='1.2', text='kept')\n"
        "    client.api_call('conversations.history', params={'channel': 'C1'})\n"
        "    web.files_upload_v2(channel='C1', content=b'x', filename='a.png')\n"
    )

    calls = slack_calls(source)

    assert calls == {
        "chat.update",
        "conversations.history",
        "files.getUploadURLExternal",
        "files.completeUploadExternal",
    }
    assert needed_scopes(calls) == {"chat:write", "channels:history", "groups:history", "im:history", "files:write"}


def test_a_slack_call_the_table_does_not_know_fails_with_what_to_do() -> None:
    with pytest.raises(AssertionError, match=r"add \['admin.users.list'\] to SCOPES"):
        needed_scopes(slack_calls("def f(web):\n    web.admin_users_list(team_id='T1')\n"))


def test_the_manifest_turns_interactivity_on_with_a_request_url_to_replace() -> None:
    settings = manifest()["settings"]

    assert settings["interactivity"]["is_enabled"] is True
    assert re.fullmatch(r"https://\S+", settings["interactivity"]["request_url"])
    assert "replace" in settings["interactivity"]["request_url"].lower()  # the stack's output, pasted later
    assert settings["socket_mode_enabled"] is False  # clicks come to the Function URL over HTTPS


def test_the_manifest_is_in_slacks_format_with_a_bot_user() -> None:
    loaded = manifest()

    assert set(loaded) <= {"_metadata", "display_information", "features", "oauth_config", "settings", "functions"}
    assert loaded["display_information"]["name"] == "costguard"
    assert loaded["features"]["bot_user"]["display_name"] == "costguard"
    assert loaded["features"]["app_home"]["messages_tab_enabled"] is True  # owners read their warnings there
