"""A bare (unquoted) value in a text of code is never a key = value secret, however generated it looks: code writes
a secret's literal between quotes, and what it writes bare is a call, a macro, a record's field or a variable
(the fifth fresh set's Erlang, issue #40). Only a `KEY=value` line keeps a bare value in code (a CI log that
prints a source file and then the environment); a text that is no code keeps its bare values."""

from __future__ import annotations

import pytest

from offprompt.secrets import find_secrets
from offprompt.syntax import code_language

#: emqx's S3 uploader suite (apps/emqx_s3/test/emqx_s3_uploader_SUITE.erl): a test helper's qualified call.
_ERLANG_TEST = """-module(s3_upload_SUITE).
-compile(export_all).

t_simple_put(Config) ->
    Key = {value},
    {{ok, Pid}} = uploader:start_link(Key, #{{}}),
    ok = uploader:complete(Pid).
"""

#: emqx's dashboard token module (apps/emqx_dashboard/src/emqx_dashboard_token.erl): random bytes for a JWK.
_ERLANG_JWK = """-module(token).
-export([jwk/0]).

jwk() ->
    Key = {value},
    #{{<<"kty">> => <<"oct">>, <<"k">> => base64url:encode(Key)}}.
"""

#: emqx's connectors (apps/emqx_bridge_couchbase/src/*_connector.erl): a secret unwrapped from the config.
_ERLANG_UNWRAP = """-module(connector).
-export([headers/1]).

headers(#{{username := Username, password := Password0}}) ->
    Password = {value},
    Auth = base64:encode(<<Username/binary, ":", Password/binary>>),
    [{{<<"Authorization">>, <<"Basic ", Auth/binary>>}}].
"""

#: emqx's session (apps/emqx/src/emqx_persistent_session_ds.erl): a macro's call in a case branch.
_ERLANG_MACRO = """-module(session).
-export([commit/2]).

commit(Track, S) ->
    case Track of
        puback ->
            SeqNoKey = {value};
        pubcomp ->
            SeqNoKey = ?committed(?QOS_2)
    end,
    store(SeqNoKey, S).
"""

#: emqx's CoAP suite (apps/emqx_gateway_coap/test/emqx_coap_SUITE.erl): a record's field of another record.
_ERLANG_RECORD = """-module(coap_SUITE).
-compile(export_all).

t_notify(_) ->
    Expected = #coap_message{{
        type = con,
        token = {value}
    }},
    ?assertEqual(Expected, receive_notify()).
"""

#: (what, the text, its bare value of code, a generated-looking one in the same place).
BARE = [
    ("qualified call", _ERLANG_TEST, "s3_helpers:unique_key()", "s3_test_helpers9:unique_key2()"),
    ("random bytes", _ERLANG_JWK, "crypto:strong_rand_bytes(32)", "crypto:strong_rand_bytes(32)"),
    ("unwrap", _ERLANG_UNWRAP, "secret:unwrap(Password0)", "emqx_secret:unwrap(Password0)"),
    ("macro", _ERLANG_MACRO, "?committed(?QOS_1)", "?committed(?QOS_1)"),
    ("record field", _ERLANG_RECORD, "Notify#coap_message.token", "NotifyA0#coap_message.token"),
]


@pytest.mark.parametrize(("what", "text", "plain", "generated"), BARE, ids=[c[0] for c in BARE])
def test_a_bare_value_of_code_is_no_secret(what: str, text: str, plain: str, generated: str) -> None:
    for value in (plain, generated):
        assert code_language(text.format(value=value)) == "code"
        assert [f.value for f in find_secrets(text.format(value=value))] == []


@pytest.mark.parametrize(("what", "text", "plain", "generated"), BARE, ids=[c[0] for c in BARE])
def test_a_quoted_literal_in_the_same_place_is_one(what: str, text: str, plain: str, generated: str) -> None:
    secret = "Xk92jd0qLm7vTb3zQw8R"
    assert [f.value for f in find_secrets(text.format(value=f'"{secret}"'))] == [secret]


#: A CI log that prints an Erlang source (code by its lines) and then the job's environment.
_CI_LOG = (
    _ERLANG_TEST.format(value="s3_helpers:unique_key()")
    + "+ env\nHOME=/root\nDB_HOST=db\nDB_PASSWORD=VALUE\nPATH=/usr/bin\n+ make ct\n"
)


@pytest.mark.parametrize("value", ["Winter2024!", "Xk92jd0qLm7vTb3zQw8R"])
def test_a_word_password_of_an_env_line_in_a_log_of_code_stays_a_secret(value: str) -> None:
    text = _CI_LOG.replace("VALUE", value)
    assert code_language(text) == "code"
    assert [f.value for f in find_secrets(text)] == [value]


#: yt-dlp's extractors (yt_dlp/extractor/vrt.py): a player's key noted in a comment of code.
_PYTHON_COMMENT = """class VRTBaseIE(InfoExtractor):
    _PLAYER_INFO = {{
        'drm': {{
            'version': 'v1',
        }},
    }}
    # player key:    {value}
    _JWT_SIGNING_KEY = _PLAYER_INFO['drm']
"""

#: awscli's examples (awscli/examples/kms/create-custom-key-store.rst): a CLI's shorthand list in a command's string.
_SHORTHAND = """To create an external key store

    aws kms create-custom-key-store \\
        --custom-key-store-name ExampleKeyStore \\
        --xks-proxy-authentication-credential "AccessKeyId=ABCDE12345670EXAMPLE, RawSecretAccessKey={value}"

Output::

    {{
        "CustomKeyStoreId": "cks-1234567890abcdef0"
    }}
"""

#: laravel's console tests (tests/Integration/Console/EnvironmentDecryptCommandTest.php): a `.env`'s lines in a string.
_PHP_ENV = """<?php

class EnvironmentDecryptCommandTest extends TestCase
{{
    public function testItDecrypts(): void
    {{
        $this->filesystem->put(base_path('.env'), "APP_KEY={value}\\nAPP_ENV=local\\n");
        $this->artisan('env:decrypt')->assertExitCode(0);
    }}
}}
"""

#: crystal's OAuth specs (spec/std/oauth/access_token_spec.cr): a token's response, a query string in a string.
_CRYSTAL_QUERY = """describe OAuth::AccessToken do
  it "creates from response" do
    token = OAuth::AccessToken.from_response("oauth_token={value}&oauth_token_secret=abc")
    token.token.should eq("x")
  end
end
"""


@pytest.mark.parametrize(
    ("what", "text", "value"),
    [
        ("a comment of code", _PYTHON_COMMENT, "d7a4c9b1e2f30568a9b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5"),
        ("a shorthand list in a string", _SHORTHAND, "Xk92jd0qLm7vTb3zQw8RpL4nYc6Vb1Ht7Gs0Ma2D"),
        (".env lines in a string", _PHP_ENV, "base64:Xk92jd0qLm7vTb3zQw8RpL4nYc6Vb1Ht7Gs0Ma2D/E="),
        ("a query in a string", _CRYSTAL_QUERY, "1234-Xk92jd0qLm7vTb3zQw8RpL4n"),
    ],
)
def test_a_generated_value_where_code_writes_no_expression_stays_a_secret(what: str, text: str, value: str) -> None:
    assert code_language(text.format(value=value)) == "code"
    assert [f.value for f in find_secrets(text.format(value=value))] == [value]
