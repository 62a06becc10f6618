"""Tests for offprompt.config: real files in tmp_path, read the way `offprompt serve --config` reads them."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import pytest

from offprompt.config import (
    HttpServer,
    OffpromptSettings,
    StdioServer,
    load_config,
    parse_config,
)
from offprompt.errors import ConfigError
from offprompt.serve.http import TransportSettings, add_transport_arguments, transport_settings

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# --- what users paste ----------------------------------------------------------------------------------------


def test_claude_desktop_config_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "filesystem": {
              "command": "npx",
              "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
            },
            "github": {
              "command": "npx",
              "args": ["-y", "@modelcontextprotocol/server-github"],
              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
            }
          }
        }
        """,
    )
    config = load_config(path, check_paths=False)
    assert config.problems == {}
    github = config.servers["github"]
    assert isinstance(github, StdioServer)
    assert github.command == "npx"
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
    assert github.transport == "stdio"


def test_cursor_config_with_remote_server_and_env_file_loads(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('# secrets\nexport API_KEY="from-file"\nREGION=eu # a comment\n')
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "local": {
              "command": "python3",
              "args": ["server.py"],
              "envFile": ".env",
              "env": {"REGION": "us"}
            },
            "linear": {
              "url": "https://mcp.linear.app/mcp",
              "headers": {"Authorization": "Bearer ${env:LINEAR_TOKEN}"}
            }
          }
        }
        """,
    )
    config = load_config(path, environ={"LINEAR_TOKEN": "lin_123"}, check_paths=False)
    assert config.problems == {}
    local, linear = config.servers["local"], config.servers["linear"]
    assert isinstance(local, StdioServer)
    assert local.env == {"API_KEY": "from-file", "REGION": "us"}  # env wins over envFile
    assert isinstance(linear, HttpServer)
    assert linear.headers == {"Authorization": "Bearer lin_123"}
    assert linear.transport == "streamable_http"


def test_vscode_config_with_servers_inputs_comments_and_trailing_commas_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          // VS Code's .vscode/mcp.json
          "inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": true}],
          "servers": {
            "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"],},
            /* a remote one */
            "docs": {"type": "http", "url": "https://example.com/sse", "headers": {"X-Key": "${env:DOCS_KEY}"}},
            "events": {"type": "sse", "url": "https://example.com/events", "dev": {"watch": "src/**"}},
          },
        }
        """,
    )
    config = load_config(path, environ={"DOCS_KEY": "k"}, check_paths=False)
    assert config.problems == {}
    assert config.servers_key == "servers"
    assert isinstance(config.servers["time"], StdioServer)
    assert config.servers["docs"].transport == "streamable_http"  # "type" beats the /sse in the URL
    assert config.servers["events"].transport == "sse"


def test_claude_code_mcp_json_with_type_and_default_values_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "stitch": {
              "type": "http",
              "url": "${API_BASE_URL:-https://stitch.example.com}/mcp",
              "headers": {"X-Goog-Api-Key": "${STITCH_API_KEY}"}
            },
            "db": {
              "type": "stdio",
              "command": "npx",
              "args": ["-y", "@bytebase/dbhub", "--dsn", "${DATABASE_URL}"],
              "env": {}
            }
          }
        }
        """,
    )
    config = load_config(
        path, environ={"STITCH_API_KEY": "AQ.key", "DATABASE_URL": "postgres://localhost/app"}, check_paths=False
    )
    assert config.problems == {}
    stitch, db = config.servers["stitch"], config.servers["db"]
    assert isinstance(stitch, HttpServer)
    assert stitch.url == "https://stitch.example.com/mcp"
    assert stitch.headers["X-Goog-Api-Key"] == "AQ.key"
    assert isinstance(db, StdioServer)
    assert db.args[-1] == "postgres://localhost/app"


def test_cline_windsurf_and_roo_client_keys_are_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "cline": {"type": "streamableHttp", "url": "https://a.example/mcp", "alwaysAllow": ["x"],
                      "autoApprove": [], "disabled": false, "timeout": 60},
            "windsurf": {"serverUrl": "https://b.example/sse", "disabledTools": ["y"]},
            "roo": {"type": "streamable-http", "url": "https://c.example/mcp", "description": "Roo Code"},
            "old_cline": {"transportType": "sse", "url": "https://d.example/mcp"}
          }
        }
        """,
    )
    config = load_config(path, check_paths=False)
    assert config.problems == {}
    assert {name: server.transport for name, server in config.servers.items()} == {
        "cline": "streamable_http",
        "windsurf": "sse",
        "roo": "streamable_http",
        "old_cline": "sse",
    }
    assert any("mcpServers.cline.timeout: ignored" in warning for warning in config.warnings)
    assert any("mcpServers.windsurf.disabledTools: ignored" in warning for warning in config.warnings)


def test_example_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test")
    monkeypatch.setenv("HOME", "/home/me")
    config = load_config(REPO / "mcp.json.example", check_paths=False)
    assert config.problems == {}
    assert set(config.servers) == {"fs", "git", "github"}
    github = config.servers["github"]
    assert isinstance(github, HttpServer)
    assert github.headers["Authorization"] == "Bearer ghp_test"
    assert config.servers["fs"].policy_for("read_media_file") == "always"
    assert config.settings.preview_tokens == 200


# --- one bad server does not stop the others -----------------------------------------------------------------


def test_typo_in_a_key_names_server_path_line_and_suggestion_and_others_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "fs": {
              "comand": "npx",
              "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
            },
            "time": {"command": "uvx", "args": ["mcp-server-time"]}
          }
        }
        """,
    )
    config = load_config(path, check_paths=False)
    assert config.problems["fs"] == f"{path}:4: mcpServers.fs.comand: unknown key 'comand' — did you mean 'command'?"
    assert list(config.servers) == ["time"]


def test_wrong_policy_value_names_the_tool_path_line_and_what_is_allowed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "fs": {
              "command": "npx",
              "tools": {
                "read_file": {"off_prompt": "sometimes"}
              }
            }
          }
        }
        """,
    )
    problem = load_config(path, check_paths=False).problems["fs"]
    assert problem == (
        f"{path}:6: mcpServers.fs.tools.read_file.off_prompt: should be 'auto', 'always' or 'never' (got \"sometimes\")"
    )


def test_unknown_key_in_a_tool_policy_lists_what_is_allowed(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"fs": {"command": "npx", "tools": {"read_file": {"offprompt": "never"}}}}}')
    problem = load_config(path, check_paths=False).problems["fs"]
    assert "mcpServers.fs.tools.read_file.offprompt: unknown key 'offprompt' — did you mean 'off_prompt'?" in problem


def test_unset_variable_names_the_variable_and_the_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "github": {
              "url": "https://api.githubcopilot.com/mcp/",
              "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}
            },
            "time": {"command": "uvx", "args": ["mcp-server-time"]}
          }
        }
        """,
    )
    config = load_config(path, environ={}, check_paths=False)
    assert config.problems["github"].startswith(
        f"{path}:5: mcpServers.github.headers.Authorization: environment variable GITHUB_TOKEN is not set"
    )
    assert "time" in config.servers


def test_both_command_and_url_or_neither_is_a_problem_naming_the_server(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "both": {"command": "npx", "url": "https://example.com/mcp"},
            "neither": {"args": ["x"]},
            "good": {"url": "https://example.com/mcp"}
          }
        }
        """,
    )
    config = load_config(path, check_paths=False)
    assert config.problems["both"].startswith(f"{path}:3: mcpServers.both: has both command")
    assert config.problems["neither"].startswith(f"{path}:4: mcpServers.neither: has neither command")
    assert list(config.servers) == ["good"]


def test_remote_server_with_local_keys_says_which_kind_they_belong_to(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"api": {"url": "https://example.com/mcp", "args": ["--verbose"]}}}')
    problem = load_config(path, check_paths=False).problems["api"]
    assert "mcpServers.api.args: 'args' is for a local server (one with a command)" in problem


def test_bad_url_shows_the_file_value_not_the_secret_behind_it(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"api": {"url": "${API_URL}"}}}')
    problem = load_config(path, environ={"API_URL": "hunter2"}, check_paths=False).problems["api"]
    assert "mcpServers.api.url: must be an http:// or https:// URL" in problem
    assert '(got "${API_URL}")' in problem
    assert "hunter2" not in problem


def test_type_that_contradicts_the_block_is_a_problem(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"x": {"type": "stdio", "url": "https://example.com/mcp"}}}')
    problem = load_config(path, check_paths=False).problems["x"]
    assert 'mcpServers.x.type: says "stdio", but the server has a url' in problem


def test_unknown_type_lists_the_transports(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"x": {"type": "websocket", "url": "wss://example.com"}}}')
    problem = load_config(path, check_paths=False).problems["x"]
    assert 'mcpServers.x.type: unknown transport "websocket"; use "stdio", "http" or "sse"' in problem


def test_command_not_on_path_and_missing_cwd_are_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "mcpServers": {
            "gone": {"command": "offprompt-no-such-program-xyz"},
            "lost": {"command": "python3", "cwd": "no/such/dir"},
            "here": {"command": "PYTHON"}
          }
        }
        """.replace("PYTHON", Path(sys.executable).as_posix()),
    )
    config = load_config(path)
    assert config.problems["gone"] == (
        f'{path}:3: mcpServers.gone.command: "offprompt-no-such-program-xyz" was not found on PATH; '
        "install it or give its full path"
    )
    assert f"mcpServers.lost.cwd: {tmp_path / 'no/such/dir'} is not a directory" in config.problems["lost"]
    assert list(config.servers) == ["here"]


def test_vscode_input_variable_says_how_to_replace_it(tmp_path: Path) -> None:
    path = write(tmp_path, '{"servers": {"x": {"command": "npx", "env": {"TOKEN": "${input:token}"}}}}')
    problem = load_config(path, check_paths=False).problems["x"]
    assert "mcpServers" not in problem
    assert "servers.x.env.TOKEN: ${input:token} is a VS Code prompt" in problem
    assert "${env:NAME}" in problem


def test_disabled_server_is_skipped_without_checking_it(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{"mcpServers": {"old": {"command": "npx", "env": {"T": "${UNSET_TOKEN}"}, "disabled": true}}}'
    )
    config = load_config(path, environ={}, check_paths=False)
    assert (config.servers, config.problems, config.disabled) == ({}, {}, ("old",))


# --- interpolation and transports ------------------------------------------------------------------------------


def test_env_interpolation_in_every_string_field(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    data = {
        "mcpServers": {
            "local": {
                "command": "${PYTHON}",
                "args": ["--root", "${env:ROOT}/data", "price: $${NOT_A_VAR}"],
                "env": {"KEY": "${KEY}", "SEP": "a${/}b"},
                "cwd": "${ROOT}/work",
            },
            "remote": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${env:KEY}"}},
        }
    }
    environ = {"PYTHON": "python3", "ROOT": str(tmp_path), "KEY": "s3cret", "HOST": "mcp.example.com"}
    config = parse_config(data, environ=environ)
    local, remote = config.servers["local"], config.servers["remote"]
    assert isinstance(local, StdioServer)
    assert isinstance(remote, HttpServer)
    assert local.command == "python3"
    assert local.args == ["--root", f"{tmp_path}/data", "price: ${NOT_A_VAR}"]
    assert local.env["KEY"] == "s3cret"
    assert local.cwd == tmp_path / "work"
    assert remote.url == "https://mcp.example.com/mcp"
    assert remote.headers == {"Authorization": "Bearer s3cret"}


@pytest.mark.parametrize(
    ("block", "transport"),
    [
        ({"url": "https://example.com/mcp"}, "streamable_http"),
        ({"url": "https://example.com/sse"}, "sse"),
        ({"url": "https://example.com/v1/sse/"}, "sse"),
        ({"url": "https://example.com/sse", "type": "http"}, "streamable_http"),
        ({"url": "https://example.com/mcp", "type": "sse"}, "sse"),
        ({"url": "https://example.com/mcp", "transport": "sse"}, "sse"),
        ({"httpUrl": "https://example.com/sse"}, "streamable_http"),
    ],
)
def test_transport_comes_from_type_else_transport_else_the_url(block: dict[str, str], transport: str) -> None:
    server = parse_config({"mcpServers": {"s": block}}).servers["s"]
    assert server.transport == transport


def test_policy_for_tool_setting_wins_over_server_setting() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "fs": {
                    "command": "npx",
                    "off_prompt": "never",
                    "tools": {"read_media_file": {"off_prompt": "always"}, "list": {}},
                }
            }
        }
    )
    fs = config.servers["fs"]
    assert (fs.policy_for("read_media_file"), fs.policy_for("list"), fs.policy_for("other")) == (
        "always",
        "never",
        "never",
    )


# --- the offprompt block and the file as a whole are fatal ------------------------------------------------------


def test_defaults_without_an_offprompt_block() -> None:
    settings = parse_config({"mcpServers": {}}).settings
    assert (settings.memory_name, settings.threshold_tokens, settings.preview_tokens) == ("default", 4000, 0)
    assert settings.chroma.mode == "persistent"
    assert settings.max_bytes == 2 * 1024**3


def test_http_sessions_default_to_100_per_token_closing_after_600_idle_seconds() -> None:
    settings = parse_config({"mcpServers": {}}).settings
    assert (settings.max_sessions_per_token, settings.session_idle_seconds) == (100, 600)
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)  # `offprompt serve` without session flags keeps the config's values
    served = transport_settings(
        parser.parse_args(["--transport", "sse"]),
        {},
        max_sessions_per_token=settings.max_sessions_per_token,
        session_idle_seconds=settings.session_idle_seconds,
    )
    assert (served.max_sessions_per_token, served.session_idle_seconds) == (100, 600)
    assert (TransportSettings().max_sessions_per_token, TransportSettings().session_idle_seconds) == (100, 600)


def test_offprompt_block_error_is_fatal_and_names_key_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "offprompt": {
            "memory_name": "default",
            "threshold_tokens": -5
          },
          "mcpServers": {}
        }
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}:4: offprompt.threshold_tokens: should be greater than 0 (got -5)"


def test_offprompt_block_typo_is_fatal_with_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "offprompt": {"treshold_tokens": 2000}\n}\n')
    with pytest.raises(ConfigError, match=r"mcp.json:2: offprompt.treshold_tokens: .*did you mean 'threshold_tokens'"):
        load_config(path)


def test_chroma_http_mode_needs_a_url() -> None:
    with pytest.raises(ConfigError, match=r'offprompt.chroma: mode "http" needs a url'):
        parse_config({"offprompt": {"chroma": {"mode": "http"}}})


def test_preview_must_be_smaller_than_threshold() -> None:
    with pytest.raises(ConfigError, match=r"preview_tokens \(5000\) must be smaller than threshold_tokens \(4000\)"):
        parse_config({"offprompt": {"preview_tokens": 5000}})


def test_data_dir_expands_home_and_is_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = load_config(write(tmp_path, '{"offprompt": {"data_dir": "~/offprompt"}}', "a.json")).settings
    relative = load_config(write(tmp_path, '{"offprompt": {"data_dir": "memory"}}', "b.json")).settings
    assert (home.data_dir, relative.data_dir) == (tmp_path / "home" / "offprompt", tmp_path / "memory")


def test_bad_json_gives_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "mcpServers": {\n    "fs": {"command": "npx" "args": []}\n  }\n}\n')
    with pytest.raises(ConfigError, match=rf"^{path}:3:29: not valid JSON: Expecting ',' delimiter$"):
        load_config(path)


def test_missing_file_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no such config file; pass --config"):
        load_config(tmp_path / "nope.json")


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"the top level must be an object holding mcpServers .*not a list"):
        load_config(write(tmp_path, "[]"))


def test_unknown_top_level_key_is_fatal_with_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "mcpservers": {}\n}\n')
    with pytest.raises(
        ConfigError, match=r"mcp.json:2: mcpservers: unknown key 'mcpservers' — did you mean 'mcpServers'"
    ):
        load_config(path)


def test_client_settings_file_is_refused_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, '{"globalShortcut": "Ctrl+Space", "mcpServers": {}}')
    with pytest.raises(ConfigError, match=r"copy its mcpServers block into a file of its own"):
        load_config(path)


def test_mcpservers_and_servers_together_is_fatal() -> None:
    with pytest.raises(ConfigError, match=r"both mcpServers and servers are given; keep one"):
        parse_config({"mcpServers": {}, "servers": {}})


def test_key_given_twice_is_a_warning_naming_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x"},\n    "a": {"command": "y"}\n  }\n}\n')
    config = load_config(path, check_paths=False)
    assert config.warnings == (f"{path}:4: mcpServers.a: given twice (lines 3 and 4); the last one is used",)
    assert config.servers["a"].command == "y"  # type: ignore[union-attr]


def test_place_names_a_field_for_the_proxy_s_own_messages(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{\n  "mcpServers": {\n    "api": {\n      "url": "https://example.com/mcp"\n    }\n  }\n}\n'
    )
    config = load_config(path)
    assert config.place("api", "url") == f"{path}:4: mcpServers.api.url"


def test_command_line_override_is_validated_and_names_the_flag() -> None:
    settings = OffpromptSettings()
    assert settings.override(memory_name="work", data_dir=None).memory_name == "work"
    with pytest.raises(ConfigError, match=r"^--memory-name: must be 1-64 letters"):
        settings.override(memory_name="../escape")


def test_numbers_in_env_and_headers_become_strings() -> None:
    config = parse_config({"mcpServers": {"s": {"command": "x", "env": {"PORT": 8080, "DEBUG": True}}}})
    assert config.servers["s"].env == {"PORT": "8080", "DEBUG": "true"}  # type: ignore[union-attr]


def test_comments_and_line_numbers_survive_jsonc(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          /* block comment with "quotes" and {braces} */
          "mcpServers": { // servers
            "s": {"command": "npx", "url": "https://x.example/mcp // not a comment"},
          },
        }
        """,
    )
    problem = load_config(path, check_paths=False).problems["s"]
    assert problem.startswith(f"{path}:4: mcpServers.s: has both command")


def test_the_embedding_function_is_chosen_in_the_offprompt_block() -> None:
    loaded = parse_config(
        {"offprompt": {"embedding": {"name": "ollama", "config": {"model_name": "nomic-embed-text"}}}, "mcpServers": {}}
    )
    assert loaded.settings.embedding.name == "ollama"
    assert loaded.settings.embedding.config == {"model_name": "nomic-embed-text"}
    assert parse_config({"mcpServers": {}}).settings.embedding.name == "offprompt-minilm-int8"
    with pytest.raises(ConfigError, match=r"embedding\.nmae"):
        parse_config({"offprompt": {"embedding": {"nmae": "x"}}, "mcpServers": {}})


def test_a_multi_line_block_comment_keeps_the_line_numbers_below_it(tmp_path: Path) -> None:
    # A licence header or a disabled server, commented out over several lines, sits above the problem.
    path = write(
        tmp_path,
        """
        /*
          Shared team config.
          "old": {"command": "retired"},
        */
        {
          "mcpServers": {
            /* "fs": {
                 "command": "npx"
               }, */
            "fs": {"comand": "npx"}
          }
        }
        """,
    )
    problem = load_config(path, check_paths=False).problems["fs"]
    assert problem.startswith(f"{path}:10: mcpServers.fs.comand: unknown key")


def test_postgres_names_the_shared_memory_and_a_wrong_one_is_named_without_its_password() -> None:
    dsn = "postgresql://team:s3cret@db.example:5432/offprompt"
    assert parse_config({"offprompt": {"postgres": dsn}}).settings.postgres == dsn
    assert parse_config({}).settings.postgres is None  # the embedded memory stays the default
    with pytest.raises(ConfigError) as wrong:
        parse_config({"offprompt": {"postgres": "mysql://team:s3cret@db.example/offprompt"}})
    message = str(wrong.value)
    assert "offprompt.postgres" in message
    assert "must be a PostgreSQL URL" in message
    assert "s3cret" not in message
    assert "team:***@db.example" in message
    assert "s3cret" not in repr(parse_config({"offprompt": {"postgres": dsn}}).settings)


def test_store_names_the_backend_and_must_agree_with_postgres_and_indexer_false_needs_postgres() -> None:
    dsn = "postgresql://team:s3cret@db.example:5432/offprompt"
    assert parse_config({"offprompt": {"store": "postgres", "postgres": dsn}}).settings.postgres == dsn
    assert parse_config({"offprompt": {"store": "files"}}).settings.postgres is None
    for block, said in [
        ({"store": "postgres"}, '"store": "postgres" needs "postgres"'),
        ({"store": "files", "postgres": dsn}, '"store": "files" and "postgres" are both set'),
        ({"store": "sqlite"}, "offprompt.store"),
        ({"indexer": False}, '"indexer": false needs a shared memory'),
    ]:
        with pytest.raises(ConfigError) as wrong:
            parse_config({"offprompt": block})
        assert said in str(wrong.value)
        assert "s3cret" not in str(wrong.value)


def test_the_embedded_memory_never_imports_the_postgres_driver_and_a_missing_driver_says_what_to_install(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    check = (
        "import sys\n"
        "from pathlib import Path\n"
        "import offprompt.cli\n"
        "from offprompt.memory.settings import MemorySettings\n"
        "from offprompt.memory.task_memory import TaskMemory\n"
        f"TaskMemory.open(MemorySettings(name='m', data_dir=Path({str(tmp_path)!r}))).close()\n"
        "assert 'psycopg' not in sys.modules, 'the embedded memory imported psycopg'\n"
        "sys.modules['psycopg'] = None  # as if the postgres extra were not installed\n"
        "from offprompt.errors import ConfigError\n"
        "from offprompt.memory.storage.pg import PgDatabase\n"
        "try:\n"
        "    PgDatabase('postgresql://u:pw@db/x', 'm')\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "pip install 'offprompt[postgres]'" in done.stdout
