"""LocalManagedConfig: PraisonAI's field names, one clear sentence for every bad value, the tool plan
(instance names, callables, Anthropic's toolset with its enable flags and permission policies,
custom tools), packages as ComputeConfig takes them, the compute fields through the real
provisioning plan, and the record the store keeps (round trip, stable hash in another process)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from praisonai._errors import ConfigError
from praisonai.compute.config import ComputeConfig
from praisonai.managed.config import (
    DEFAULT_SYSTEM,
    INSTANCE_TOOL_NAMES,
    CustomTool,
    LocalAgentConfig,
    LocalManagedConfig,
    SandboxedAgentConfig,
    check_host_packages,
    compute_fields,
    config_hash,
    config_record,
    parse_packages,
    resolve_tools,
)
from praisonai.sandbox.provisioning import plan

TOOLSET = "agent_toolset_20260401"
ROOT = Path(__file__).resolve().parents[2]


def fib(n: int) -> int:
    """Fibonacci number n."""
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def ask(request: Any) -> str:
    return "allow"


def answer(name: str, data: Any) -> str:
    return "42"


def custom(name: str = "lookup", **schema: Any) -> dict[str, Any]:
    input_schema = schema or {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return {"type": "custom", "name": name, "description": "Look a word up.", "input_schema": input_schema}


def rejected(**fields: Any) -> str:
    """The one sentence that making a config with ``fields`` raises."""
    with pytest.raises(ConfigError) as caught:
        LocalManagedConfig(**fields)
    message = str(caught.value)
    assert message.startswith("invalid LocalManagedConfig: ") and "\n" not in message
    assert not isinstance(caught.value.__cause__, Exception)  # pydantic's error is not chained
    return message


# ---- fields, defaults, aliases ------------------------------------------------------------------


def test_defaults_are_praisonais_names_and_the_full_instance_toolset_allowed() -> None:
    config = LocalManagedConfig()
    assert (config.name, config.model, config.system, config.max_turns) == (
        "agent",
        "gpt-4o-mini",
        DEFAULT_SYSTEM,
        25,
    )
    assert config.budget_tokens is None and config.packages is None and not config.host_packages_ok
    assert dict(resolve_tools(config).instance) == dict.fromkeys(INSTANCE_TOOL_NAMES, "allow")
    assert LocalAgentConfig is LocalManagedConfig and SandboxedAgentConfig is LocalManagedConfig


def test_instructions_and_budget_are_accepted_for_system_and_budget_tokens() -> None:
    config = LocalManagedConfig(instructions="You are a coder.", budget=1000)
    assert (config.system, config.budget_tokens) == ("You are a coder.", 1000)
    assert "give system or instructions, not both" in rejected(system="a", instructions="b")
    assert "give budget_tokens or budget, not both" in rejected(budget=1, budget_tokens=2)


def test_a_config_is_frozen_and_replace_validates_the_copy() -> None:
    config = LocalManagedConfig(model="m1", env={"A": "1"})
    with pytest.raises(ValueError):
        config.model = "m2"  # type: ignore[misc]
    changed = config.replace(model="m2", instructions="Be brief.")
    assert (changed.model, changed.env, changed.system, config.model) == ("m2", {"A": "1"}, "Be brief.", "m1")
    assert changed.replace(instructions="Be terse.").system == "Be terse."  # the alias replaces system
    with pytest.raises(ConfigError, match="max_turns"):
        config.replace(max_turns=0)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"max_turns": 0}, "max_turns: must be greater than or equal to 1, not 0"),
        ({"max_turns": "5"}, "max_turns: must be a valid integer, not '5'"),
        ({"budget": 0}, "budget: must be greater than or equal to 1, not 0"),
        ({"max_turn": 3}, "unknown field 'max_turn' (did you mean 'max_turns'?)"),
        ({"colour": 3}, "unknown field 'colour' (fields: budget, budget_tokens, checkpoints, env"),
        ({"name": ""}, "name: String should have at least 1 character"),
        ({"host_packages_ok": "yes"}, "host_packages_ok: must be a valid boolean, not 'yes'"),
        ({"env": {"1A": "x"}}, "env: '1A' is not a valid environment variable name"),
        ({"env": {"A": 1}}, "env.A: must be a valid string, not 1"),
        ({"working_dir": "rel"}, "working_dir: must be an absolute path, not 'rel'"),
        ({"idle_timeout_s": 0}, "idle_timeout_s: must be greater than 0 seconds, not 0"),
        ({"ttl_s": True}, "ttl_s: must be a valid integer, not True"),
        ({"metadata": {"a": object()}}, "metadata: must be JSON data"),
        ({"environment": ""}, "environment must be a path, True, False or None, not ''"),
        ({"on_custom_tool": 5}, "on_custom_tool: must be callable, not 5"),
        ({"networking": "bogus"}, "networking: must be 'unrestricted', 'none', {'allow': [hosts]}"),
        ({"networking": {"type": "full"}}, "networking must be {'type': 'unrestricted'}, {'type': 'limited'"),
        ({"tools": "execute_command"}, "tools must be a list, not str"),
        ({"packages": "cargo:serde"}, "packages: 'cargo:serde' names the package manager 'cargo'"),
    ],
)
def test_a_bad_field_is_one_sentence_naming_it_and_why(fields: dict[str, Any], expected: str) -> None:
    assert expected in rejected(**fields)


def test_coerce_takes_none_an_instance_a_dict_or_a_dataclass_with_praisonais_defaults() -> None:
    @dataclasses.dataclass
    class PraisonAIConfig:  # PraisonAI's LocalManagedConfig, as its SDK declares it
        name: str = "Agent"
        model: str = "gpt-4o"
        system: str = DEFAULT_SYSTEM
        tools: list[str] = dataclasses.field(
            default_factory=lambda: ["execute_command", "read_file", "write_file", "list_files", "search_web"]
        )
        max_turns: int = 25
        working_dir: str = ""
        packages: dict[str, list[str]] | None = None
        networking: dict[str, str] = dataclasses.field(default_factory=lambda: {"type": "unrestricted"})
        host_packages_ok: bool = False
        session_title: str = "PraisonAI local session"
        on_custom_tool: Any = None

    config = LocalManagedConfig.coerce(PraisonAIConfig(model="gpt-4.1", packages={"pip": ["rich"]}))
    assert (config.model, config.name, config.tools, config.packages) == (
        "gpt-4.1",
        "agent",
        None,
        {"pip": ["rich"]},
    )
    assert config.model_fields_set == {"model", "packages"}  # its defaults did not become ours
    assert LocalManagedConfig.coerce(None) == LocalManagedConfig()
    assert LocalManagedConfig.coerce(config) is config
    assert LocalManagedConfig.coerce({"model": "m", "instructions": "s"}).system == "s"
    with pytest.raises(
        ConfigError, match="config must be a LocalManagedConfig, a dict or a dataclass, not str"
    ):
        LocalManagedConfig.coerce("gpt-4o")
    with pytest.raises(ConfigError, match="unknown field 'modle'"):
        LocalManagedConfig.coerce({"modle": "m"})


def test_environment_paths_are_made_absolute_and_booleans_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert LocalManagedConfig(environment="env.yaml").environment == str(tmp_path / "env.yaml")
    assert LocalManagedConfig(environment=tmp_path / "e.yaml").environment == str(tmp_path / "e.yaml")
    assert LocalManagedConfig(environment=False).environment is False


# ---- tools --------------------------------------------------------------------------------------


def test_names_aliases_and_callables() -> None:
    tools = resolve_tools({"tools": ["execute_command", "apply_diff", "search_file", fib]})
    assert dict(tools.instance) == {"execute_command": "allow", "edit_file": "allow", "grep": "allow"}
    assert tools.functions == (fib,) and tools.names == ("execute_command", "edit_file", "grep", "fib")
    assert resolve_tools({"tools": []}).names == ()


def test_the_toolset_maps_anthropic_names_with_all_enabled_by_default() -> None:
    tools = resolve_tools({"tools": [{"type": TOOLSET}]})
    assert dict(tools.instance) == {
        "execute_command": "allow",
        "read_file": "allow",
        "write_file": "allow",
        "edit_file": "allow",
        "list_files": "allow",  # glob -> list_files and glob
        "glob": "allow",
        "grep": "allow",
    }
    assert set(tools.skipped) == {"web_fetch", "web_search"}  # enabled only by default: skipped, said why
    assert "no local equivalent" in tools.skipped["web_fetch"]


def test_the_toolset_honours_enable_flags_and_permission_policies() -> None:
    toolset = {
        "type": TOOLSET,
        "default_config": {"enabled": False, "permission_policy": {"type": "always_ask"}},
        "configs": [
            {"name": "bash", "enabled": True},  # inherits always_ask
            {"name": "read", "enabled": True, "permission_policy": {"type": "always_allow"}},
            {"name": "edit", "enabled": True, "permission_policy": {"type": "auto"}},  # auto -> ask here
            {"name": "write", "permission_policy": {"type": "always_allow"}},  # still disabled by default
            {"name": "web_fetch", "enabled": False, "allowed_domains": ["x.org"]},
        ],
    }
    tools = resolve_tools({"tools": [toolset]})
    assert dict(tools.instance) == {"execute_command": "ask", "read_file": "allow", "edit_file": "ask"}
    assert dict(tools.skipped) == {}


def test_enabled_by_default_with_one_tool_switched_off_and_a_default_policy() -> None:
    toolset = {
        "type": TOOLSET,
        "default_config": {"permission_policy": {"type": "auto"}},
        "configs": [{"name": "glob", "enabled": False}, {"name": "web_search", "enabled": False}],
    }
    tools = resolve_tools({"tools": [toolset]})
    assert dict(tools.instance) == dict.fromkeys(
        ["execute_command", "read_file", "write_file", "edit_file", "grep"], "ask"
    )
    assert list(tools.skipped) == ["web_fetch"]


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (["bash"], "tools[0]: unknown tool 'bash' (instance tools: execute_command, read_file"),
        ([3], "tools[0]: int is not a tool (a tool name, a Python callable"),
        ([lambda: 1], "tools[0]: the callable's name '<lambda>' is not a tool name"),
        (
            [{"type": "mcp_toolset", "mcp_server_name": "x"}],
            "tools[0]: MCP toolsets are not supported by local runs",
        ),
        ([{"type": "web_search_20250305"}], "tools[0]: unknown tool type 'web_search_20250305'"),
        (
            [{"type": TOOLSET, "configs": [{"name": "web_fetch", "enabled": True}]}],
            "tools[0].configs[0]: web_fetch has no local equivalent; disable it (local toolset tools: bash",
        ),
        (
            [{"type": TOOLSET, "configs": [{"name": "web_search"}]}],  # enabled by the default, named
            "tools[0].configs[0]: web_search has no local equivalent",
        ),
        (
            [{"type": TOOLSET, "configs": [{"name": "shell"}]}],
            "tools[0].configs[0].name: must be 'bash', 'edit'",
        ),
        (
            [{"type": TOOLSET, "configs": [{"name": "bash"}, {"name": "bash", "enabled": False}]}],
            "tools[0].configs[1]: 'bash' is configured twice",
        ),
        (
            [{"type": TOOLSET, "configs": [{"name": "bash", "permission_policy": {"type": "sometimes"}}]}],
            "tools[0].configs[0].permission_policy.type: must be 'always_allow', 'always_ask' or 'auto'",
        ),
        (
            [{"type": TOOLSET, "default_config": {"enabled": "yes"}}],
            "tools[0].default_config.enabled: must be",
        ),
        ([{"type": TOOLSET, "extra": 1}], "unknown field 'tools[0].extra'"),
        (["read_file", {"type": TOOLSET}], "tools[1]: the tool 'read_file' is already given by tools[0]"),
        (["glob", "glob"], "tools[1]: the tool 'glob' is already given by tools[0]"),
        ([fib, custom("fib")], "tools[1]: the tool 'fib' is already given by tools[0]"),
    ],
)
def test_bad_tools_are_one_sentence_naming_the_entry(tools: list[Any], expected: str) -> None:
    assert expected in rejected(tools=tools)


def test_a_custom_tool_keeps_its_schema_and_the_configs_callback_wins() -> None:
    config = LocalManagedConfig(tools=[custom(), "read_file"], on_custom_tool=answer)
    tools = resolve_tools(config, custom_callback=ask)
    (tool,) = tools.custom
    assert tool == CustomTool("lookup", "Look a word up.", custom()["input_schema"])
    assert tool.spec().parameters == custom()["input_schema"] and tool.spec().name == "lookup"
    assert tools.on_custom_tool is answer  # the config's callback over the constructor's
    assert resolve_tools({"tools": [custom()]}, custom_callback=ask).on_custom_tool is ask
    assert config.callbacks(on_tool_confirmation=ask) == (ask, answer)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (custom("a b"), "tools[0].name: must be 1 to 64 letters, digits, _ or -, not 'a b'"),
        (custom("x" * 65), "tools[0].name: must be 1 to 64 letters"),
        (
            custom(type="string"),
            "tools[0].input_schema: must be a JSON schema of type \"object\", not 'string'",
        ),
        (
            custom(type="object", properties=[]),
            "tools[0].input_schema.properties: must map each property name",
        ),
        (
            custom(type="object", required="q"),
            "tools[0].input_schema.required: must be a list of property names",
        ),
        (custom(type="object", required=["q"]), "tools[0].input_schema.required: 'q' not in properties"),
        (custom(type="object", default=object()), "tools[0].input_schema: must be JSON data"),
        (
            {"type": "custom", "name": "x", "input_schema": {"type": "object"}},
            "tools[0].description is required",
        ),
        ({**custom(), "parameters": {}}, "unknown field 'tools[0].parameters'"),
    ],
)
def test_a_bad_custom_tool_is_one_sentence(entry: dict[str, Any], expected: str) -> None:
    assert expected in rejected(tools=[entry])


# ---- packages -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {}),
        ({"pip": ["requests"], "apt": [], "npm": ["left-pad"]}, {"pip": ["requests"], "npm": ["left-pad"]}),
        (["requests", "numpy"], {"pip": ["requests", "numpy"]}),  # a list is pip, as in PraisonAI
        ("a,b", {"pip": ["a", "b"]}),  # PraisonAI's --packages a,b
        ("pip:a,b npm:c apt:git", {"pip": ["a", "b"], "npm": ["c"], "apt": ["git"]}),
        (["pip:a,b", "npm:c", "pip:a"], {"pip": ["a", "b"], "npm": ["c"]}),  # several strings; dups dropped
        ("pip:requests[socks,http2]>=2,<3,rich", {"pip": ["requests[socks,http2]>=2,<3", "rich"]}),
        ("git+https://example.org/x.git", {"pip": ["git+https://example.org/x.git"]}),
        ("npm:left-pad@1.3.0", {"npm": ["left-pad@1.3.0"]}),
    ],
)
def test_parse_packages_gives_what_compute_config_takes(value: Any, expected: dict[str, list[str]]) -> None:
    parsed = parse_packages(value)
    assert parsed == expected
    assert ComputeConfig(packages=parsed).packages == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cargo:serde", "packages: 'cargo:serde' names the package manager 'cargo'; use pip, apt, npm"),
        ({"gem": ["x"]}, "packages: the key 'gem' names the package manager 'gem'"),
        ("pip:", "packages: 'pip:' names no package"),
        ("pip:,,", "packages: 'pip:,,' names no package"),
        ("pip:a;rm", "packages: pip package 'a;rm' is not a package specifier"),
        ("apt:$(id)", "packages: apt package '$(id)' is not a package specifier"),
        ("npm:-g", "packages: npm package '-g' is not a package specifier"),
        ({"pip": ["two words"]}, "packages: pip package 'two words' is not a package specifier"),
        ({"pip": "requests"}, "packages: pip must be a list of package names, not 'requests'"),
        (3, "packages: must be a dict of lists per manager, a list of names or 'pip:a,b' specs, not 3"),
    ],
)
def test_bad_packages_are_one_sentence_naming_the_entry(value: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_packages(value)
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert expected in rejected(packages=value)  # the config reports the same sentence


def test_a_config_normalises_its_packages_and_no_packages_is_none() -> None:
    assert LocalManagedConfig(packages="pip:a npm:b").packages == {"pip": ["a"], "npm": ["b"]}
    assert LocalManagedConfig(packages=["requests"]).packages == {"pip": ["requests"]}
    assert LocalManagedConfig(packages={}).packages is None


# ---- compute fields and host packages -----------------------------------------------------------


def test_compute_fields_hold_only_what_the_config_sets() -> None:
    assert compute_fields(LocalManagedConfig()) == {}
    config = LocalManagedConfig(
        packages="pip:rich",
        env={"MODE": "ci"},
        working_dir="/srv/app/",
        networking={"type": "limited"},
        idle_timeout_s=60,
        ttl_s=600,
    )
    assert compute_fields(config) == {
        "packages": {"pip": ["rich"]},
        "env": {"MODE": "ci"},
        "working_dir": "/srv/app/",
        "network": "none",  # PraisonAI's limited networking with no hosts
        "idle_timeout_s": 60,
        "ttl_s": 600,
    }
    assert compute_fields(LocalManagedConfig(networking={"allow": ["pypi.org"]}))["network"] == {
        "allow": ["pypi.org"]
    }
    assert (
        compute_fields(LocalManagedConfig(networking={"type": "unrestricted"}))["network"] == "unrestricted"
    )


def test_compute_fields_go_over_the_environment_file_through_the_provisioning_plan(tmp_path: Path) -> None:
    env_file = tmp_path / "environment.yaml"
    env_file.write_text(
        "working_dir: /repo\nenv: {A: file, B: file}\npackages: {apt: [jq]}\nidle_timeout: 900\n"
    )
    config = LocalManagedConfig(env={"B": "config"}, packages="pip:rich", environment=str(env_file))
    planned = plan("local", compute_fields(config), environment=config.environment).config
    assert planned.working_dir == "/repo"  # the config is silent: the file's stands
    assert planned.env == {"A": "file", "B": "config"}
    assert planned.packages == {"apt": ["jq"], "pip": ["rich"]}
    assert planned.idle_timeout_s == 900


def test_packages_with_no_compute_are_refused_unless_host_packages_ok() -> None:
    with pytest.raises(ConfigError) as caught:
        check_host_packages(LocalManagedConfig(packages="pip:rich apt:jq"), compute_named=False)
    assert str(caught.value) == (
        "packages (pip:rich apt:jq) would be installed on this machine; name a compute "
        "(docker, ssh, …) or set host_packages_ok=True"
    )
    check_host_packages(LocalManagedConfig(packages="pip:rich"), compute_named=True)
    check_host_packages(LocalManagedConfig(packages="pip:rich", host_packages_ok=True), compute_named=False)
    check_host_packages(LocalManagedConfig(), compute_named=False)


# ---- the record ---------------------------------------------------------------------------------


def _full_config() -> LocalManagedConfig:
    return LocalManagedConfig(
        name="coder",
        model="gpt-4o-mini",
        instructions="You are a coder.",
        tools=[
            "execute_command",
            fib,
            {"type": TOOLSET, "configs": [{"name": "bash", "enabled": False}]},
            custom(),
        ],
        max_turns=7,
        budget=50_000,
        metadata={"team": "a"},
        env={"TOKEN": "s3cret", "MODE": "ci"},
        packages="pip:rich",
        networking="none",
        session_title="first try",
        on_tool_confirmation=ask,
        on_custom_tool=answer,
    )


def test_the_record_is_json_without_callbacks_secrets_or_the_title() -> None:
    record = config_record(_full_config())
    text = json.dumps(record)
    assert "s3cret" not in text and "first try" not in text
    assert "on_custom_tool" not in record and "session_title" not in record
    assert record["env"] == ["MODE", "TOKEN"]
    assert record["tools"][1] == {"type": "function", "name": "fib", "ref": f"{__name__}.fib"}
    assert record["tools"][3] == custom()
    assert (record["system"], record["budget_tokens"], record["max_turns"]) == ("You are a coder.", 50_000, 7)
    assert record["packages"] == {"pip": ["rich"]} and record["schema"] == 1


def test_the_record_round_trips_and_reports_callables_it_cannot_rebuild() -> None:
    original = _full_config()
    record = config_record(original)
    rebuilt = LocalManagedConfig.from_record(json.loads(json.dumps(record)), env={"TOKEN": "s3cret"})
    assert config_record(rebuilt) == {**record, "env": ["TOKEN"]}  # MODE had no value given
    assert rebuilt.env == {"TOKEN": "s3cret"} and rebuilt.on_custom_tool is None
    plan_ = resolve_tools(rebuilt)
    assert plan_.missing == (f"{__name__}.fib",) and plan_.functions == ()
    assert "fib" not in plan_.names and "lookup" in plan_.names

    bound = LocalManagedConfig.from_record(record, functions=[fib], env={"TOKEN": "s3cret", "MODE": "ci"})
    assert resolve_tools(bound).functions == (fib,) and resolve_tools(bound).missing == ()
    assert config_record(bound) == record and config_hash(config_record(bound)) == config_hash(record)


def test_a_bad_record_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a LocalManagedConfig record of schema 1"):
        LocalManagedConfig.from_record({"model": "m"})
    with pytest.raises(ConfigError, match="max_turns"):
        LocalManagedConfig.from_record({**config_record(LocalManagedConfig()), "max_turns": -1})
    with pytest.raises(ConfigError, match="the record's env must be a list of variable names, not 'AB'"):
        LocalManagedConfig.from_record({**config_record(LocalManagedConfig()), "env": "AB"})


def test_the_hash_is_stable_across_processes_and_changes_with_the_definition() -> None:
    record = config_record(_full_config())
    assert config_hash(record) == config_hash(dict(reversed(record.items())))  # key order is irrelevant
    assert config_hash(record) != config_hash(config_record(_full_config().replace(model="gpt-4.1")))
    assert config_hash(record) == config_hash(config_record(_full_config().replace(session_title="other")))
    script = textwrap.dedent(
        """
        import json, sys
        from praisonai.managed.config import LocalManagedConfig, config_hash, config_record
        record = json.load(sys.stdin)
        print(config_hash(record), config_hash(config_record(LocalManagedConfig.from_record(record))))
        """
    )
    plain = config_record(LocalManagedConfig(model="m", tools=[custom(), "grep"], packages=["rich"]))
    child = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(plain),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"},
    )
    assert child.stdout.split() == [config_hash(plain)] * 2
