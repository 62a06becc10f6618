"""The fourth fresh set's false-alarm classes (Kong's Lua, Crystal's standard library), each on lines of the same
shape written here, beside a secret of the same shape in the same code that stays found: in a text that reads as
code by its syntax (whatever its language), a key = value finding counts only when its value is a quoted literal,
never a method call, a type, a variable or a word of a comment; a test file's fixtures and a test's Basic
credentials of a word are made up. A text that is no code (config, an `env` dump, a CI log) keeps its word
passwords (issue #40's decisions)."""

from __future__ import annotations

import pytest

from offprompt.secrets import find_secrets
from offprompt.syntax import code_language

#: Kong's specs (spec/03-plugins/09-key-auth/*_spec.lua): a DAO's method call after `credentials:`.
_LUA_CALL = """local helpers = require "spec.helpers"

describe("Plugin: key-auth", function()
  lazy_setup(function()
    local consumer = bp.consumers:insert {{ username = "bob" }}
    bp.keyauth_credentials:insert {{
      key      = "{value}",
      consumer = {{ id = consumer.id }},
    }}
  end)
end)
"""

#: Crystal's C bindings (src/lib_c/*/c/pwd.cr): a struct's fields and their types.
_CRYSTAL_FIELDS = """lib LibC
  struct Passwd
    pw_name : Char*
    pw_passwd : Char*
    pw_uid : UidT
  end
{extra}end
"""

#: Kong's basic-auth specs (spec/03-plugins/10-basic-auth/03-access_spec.lua): a header of a test's user.
_LUA_BASIC = """describe("Plugin: basic-auth (access)", function()
  it("authenticates valid credentials", function()
    local res = proxy_client:get("/request", {{
      headers = {{
        ["Authorization"] = "Basic {value}",
      }}
    }})
  end)
end)
"""

#: Kong's PDK (kong/pdk/vault.lua): a usage example in a doc comment.
_LUA_DOC_COMMENT = """local _M = {{}}

--- Connects with the references resolved.
-- @usage
-- local conn = connect({{
--   username = "john",
--   password = "{value}",
-- }})
function _M.connect(options)
  return options
end

return _M
"""

#: Crystal's URI (src/uri.cr): an assignment in a condition, from an instance variable.
_CRYSTAL_CONDITION = """class URI
  def userinfo(io : IO)
    URI.encode_www_form(user, io)
    if password = {value}
      io << ':'
      URI.encode_www_form(password, io)
    end
  end
end
"""

#: Kong's declarative config specs (spec/01-unit/01-db/01-schema/11-declarative_config/*_spec.lua): fixtures
#: above the file's first `describe`.
_LUA_FIXTURE = """local helpers = require "spec.helpers"

local fixture = {{
  basicauth_credentials = {{
    {{
      username = "bob",
      password = "{value}",
    }},
  }},
}}

describe("declarative config: flatten", function()
  it("flattens the fixture", function()
    assert(flatten(fixture))
  end)
end)
"""

#: Crystal's OAuth2 session (src/oauth2/session.cr): an instance variable's method call, letters and digits.
_CRYSTAL_CALL = """class Session
  def refresh_access_token
    @access_token = {value}
  end
end
"""

#: (what, the text with a false alarm, the same code holding a secret, the secret).
CLASSES = [
    ("lua method call", _LUA_CALL.format(value="kong"), _LUA_CALL.format(value="Xk92jd0qLm7vTb3zQw8R"), None),
    (
        "crystal field type",
        _CRYSTAL_FIELDS.format(extra=""),
        _CRYSTAL_FIELDS.format(extra='  DEFAULT_PASSWD = "q7Vt2Lx9Rk4Wm8Zp"\n'),
        "q7Vt2Lx9Rk4Wm8Zp",
    ),
    (
        "basic of a test's word",
        _LUA_BASIC.format(value="Ym9iOmtvbmc="),  # bob:kong
        _LUA_BASIC.format(value="Ym9iOlhrOTJqZDBxTG03dlRiM3pRdzhS"),  # bob:Xk92jd0qLm7vTb3zQw8R
        "Ym9iOlhrOTJqZDBxTG03dlRiM3pRdzhS",
    ),
    (
        "lua doc comment",
        _LUA_DOC_COMMENT.format(value="doe"),
        _LUA_DOC_COMMENT.format(value="q7Vt2Lx9Rk4Wm8ZpY3"),
        None,
    ),
    (
        "crystal condition",
        _CRYSTAL_CONDITION.format(value="@password"),
        _CRYSTAL_CONDITION.format(value='"q7Vt2Lx9Rk4Wm8Zp"'),
        "q7Vt2Lx9Rk4Wm8Zp",
    ),
    ("spec fixture", _LUA_FIXTURE.format(value="hard2guess"), _LUA_FIXTURE.format(value="Xk92jd0qLm7vTb3zQw8R"), None),
    (
        "crystal variable call",
        _CRYSTAL_CALL.format(value="@oauth2_client.get_access_token_using_refresh_token(@access_token.refresh_token)"),
        _CRYSTAL_CALL.format(value='"Xk92jd0qLm7vTb3zQw8R"'),
        "Xk92jd0qLm7vTb3zQw8R",
    ),
]


@pytest.mark.parametrize(("what", "false_alarm", "secret", "value"), CLASSES, ids=[c[0] for c in CLASSES])
def test_a_value_read_in_the_syntax_of_code(what: str, false_alarm: str, secret: str, value: str | None) -> None:
    assert [f.value for f in find_secrets(false_alarm)] == []
    expected = value or next(v for v in ("Xk92jd0qLm7vTb3zQw8R", "q7Vt2Lx9Rk4Wm8ZpY3") if v in secret)
    assert [f.value for f in find_secrets(secret)] == [expected]


#: Texts that are no code: a word password after a strong key stays a secret (issue #40's decision).
NOT_CODE = [
    ("env dump", "HOME=/root\nDB_HOST=db\nDB_PASSWORD=Winter2024!\nPATH=/usr/bin\n", "Winter2024!"),
    ("yaml config", "database:\n  host: db\n  user: app\n  password: Winter2024\n", "Winter2024"),
    (
        "ci log",
        "Run ./deploy.sh\n+ echo deploying\ndeploying\n+ export DB_PASSWORD=Winter2024!\nDone in 3.2s\n",
        "Winter2024!",
    ),
    ("ini config", "[client]\nuser = app\npassword = Winter2024\nhost = db\n", "Winter2024"),
]


@pytest.mark.parametrize(("what", "text", "value"), NOT_CODE, ids=[c[0] for c in NOT_CODE])
def test_a_word_password_of_a_text_that_is_no_code_stays_a_secret(what: str, text: str, value: str) -> None:
    assert code_language(text) == ""
    assert [f.value for f in find_secrets(text)] == [value]


def test_code_is_told_by_its_syntax_not_its_language() -> None:
    """Languages no marker names (Lua, Crystal, Haskell, OCaml, Erlang) read as code; YAML with `type:` keys
    does not."""
    assert all(code_language(text) == "code" for _, text, _, _ in CLASSES)
    haskell = "module Main where\n\nimport Data.List\n\nmain :: IO ()\nmain = do\n  let x = 1\n  print x\n"
    ocaml = 'let () =\n  let password = Sys.getenv "P" in\n  print_string password;\n  exit 0\n'
    erlang = (
        "-module(auth).\n-export([check/1]).\n\ncheck(Password) ->\n    case Password of\n        _ -> ok\n    end.\n"
    )
    assert [code_language(t) for t in (haskell, ocaml, erlang)] == ["code", "code", "code"]
    schema = "properties:\n  password:\n    type: string\n  token:\n    type: string\n    format: password\n"
    assert code_language(schema) == ""
