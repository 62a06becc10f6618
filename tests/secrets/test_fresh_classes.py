"""The false-alarm classes left on the fresh repositories (issue #40: caddy, prometheus, composer, ecto; traefik,
laravel, phoenix), each on lines of the same shape written here, and the secrets of the same shapes that must stay
found: example tokens written as walks of the alphabet, labels of filler words, REPL sessions of docs, a JSON
string's escaped `&` after a query's key, a struct tag's options, a lock file's peer-suffixed version; and the third
set's (spring-security, jellyfin, playframework): message bundles' prose, LDIF entries' word passwords, a
`WWW-Authenticate` challenge's parameters."""

from __future__ import annotations

import pytest

from offprompt.secrets import find_secrets

#: (what the line is, the text): no secret in any.
FALSE_ALARMS = [
    # composer's tests: GitHub tokens of a known format whose body walks the digits and the alphabet.
    ("github token walk", "    ['echo https://ghp_1234567890abcdefghijklmnopqrstuvwxyzAB@github.com/acme/app'],\n"),
    ("github pat walk", "$url = 'https://github_pat_1234567890abcdefghijkl_1234567890abcdefghijklmnopqrstuvwxyzABCD"
     "EFGHIJKLMNOPQRSTUVW@github.com/acme/app';\n"),
    # prometheus' service-discovery tests and examples: an access key written as a walk.
    ("access key walk", "outscale_sd_configs:\n  - region: eu-west-2\n    access_key: A1B2C3D4E5F6G7H8I9J0\n"),
    ("access key walk in go", "package config\n\nvar c = SDConfig{\n\tAccessKey: \"A1B2C3D4E5F6G7H8I9J0\",\n}\n"),
    # prometheus' docs: a label of filler words (`strongpassword`, `verylongpassword`).
    ("strong label", "#   username: 'user@example.com'\n#   password: 'strongpassword'\n"),
    ("long label", "basic_auth:\n  username: alice\n  password: verylongpassword\n"),
    # caddy's test data: a query's `key=value` inside a JSON string, its `&` escaped.
    ("escaped ampersand", '{"help": "match `?key=value\\u0026topic=api\\u0026query=something` like this"}\n'),
    # prometheus' generated protobuf code: a struct tag's options.
    ("struct tag", "\tLabels map[string]string `protobuf:\"bytes,2,rep,name=labels,proto3\" "
     "protobuf_key:\"bytes,1,opt,name=key,proto3\" protobuf_val:\"bytes,2,opt,name=value,proto3\"`\n"),
    # a pnpm lock file: a version with its peers after it.
    ("pnpm peer version", "      '@babel/plugin-bugfix-safari-class-field-key': 7.27.1(@babel/core@7.28.0)\n"),
    # traefik's integration tests: a bearer token that is a label in camel case.
    ("bearer label", '\treq.Header.Set("Authorization", "Bearer HereIsABearerToken")\n'),
    # phoenix's docs: an iex session's example (as a doctest's).
    ("iex session", '      iex> salt = "user auth"\n      iex> secret = "q8wz1e2rt5yu7io9pa3sd4fg6hj0kl"\n'),
    # C#'s and Swift's named arguments and initializers take variables (the languages' own documentation).
    ("csharp variable", "using System;\n\nnamespace Acme.Clients;\n\npublic class Login\n{\n    void Run() =>\n"
     "        client.SignIn(userName: options.User, password: pwdInput);\n}\n"),
    ("swift variable", "import Foundation\n\nlet login = Login(user: name, password: pwdInput)\n"),
    # A test's made-up word password in C# (xUnit's `[Fact]`), Swift (XCTest) and Scala (ScalaTest), as in
    # Java's and PHP's: the frameworks' own documentation shapes.
    ("xunit word", "public class LoginTests\n{\n    [Fact]\n    public void SignsIn()\n    {\n"
     "        var user = new User { Password = \"hunter42\" };\n    }\n}\n"),
    ("xctest word", "import XCTest\n\nfinal class LoginTests: XCTestCase {\n    func testLogin() {\n"
     "        let form = Form(password: \"qwerty12\")\n    }\n}\n"),
    ("scalatest word", "class LoginSpec extends AnyFlatSpec {\n  \"login\" should \"pass\" in {\n"
     "    val creds = Map(\"password\" -> \"letmein1\")\n    Login(password = \"letmein1\")\n  }\n}\n"),
    # A doc's example in a Markdown code block (composer's proxy FAQ, ecto's README): a word password may pass.
    ("markdown example", "## Proxies\n\nSet it so:\n\n```\nhttp_proxy=http://me:pa55w0rd@proxy.acme.dev:8080\n"
     "export DB_PASSWORD=Winter2024!\n```\n"),
    # RFC 7617's example, spelled without its space.
    ("aladdin", '    headers:\n      "authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"\n'),
    # spring-security's messages_*.properties: a message bundle's values are prose in another language, its
    # letters beyond ASCII escaped or not.
    ("bundle with escapes", "Manager.accessDenied=Acceso denegado\n"
     "Provider.badCredentials=Credenciales err\\u00F3neas\nProvider.emptyPassword=Credenciales err\\u00F3neas\n"
     "Provider.locked=La cuenta est\\u00E1 bloqueada\n"),
    ("bundle without escapes", "Manager.accessDenied=Prieiga uzdrausta\nProvider.badCredentials=Blogi kredencialai\n"
     "Provider.disabled=Vartotojas isjungtas\nProvider.emptyPassword=Slaptazodis tuscias\n"),
    ("bundle in italian", "# Messaggi\nManager.accessDenied=Accesso negato\nProvider.badCredentials=Credenziali non "
     "valide\nComparator.badCredentials=Credenziali non valide\n"),
    # spring-security's test LDIF files: a test directory's people, each with a word password.
    ("ldif word passwords", "dn: ou=people,dc=acme,dc=org\nobjectclass: organizationalUnit\nou: people\n\n"
     "dn: uid=rod,ou=people,dc=acme,dc=org\nobjectclass: person\ncn: Rod Smith\nsn: Smith\nuid: rod\n"
     "userPassword: koala\n\ndn: uid=ann,ou=people,dc=acme,dc=org\nobjectclass: person\ncn: Ann Lee\nsn: Lee\n"
     "uid: ann\nuserPassword: annspassword\n"),
    # spring-security's test contexts: a user's password is the user's name and `spassword`.
    ("user's own password", '<user-service>\n  <user name="bob" password="bobspassword" authorities="ROLE_A" />\n'
     '  <user name="bill" password="billspassword" authorities="ROLE_B" />\n</user-service>\n'),
    # spring-security's tests: a `WWW-Authenticate` challenge's parameters, and an error code after `Bearer`.
    ("bearer challenge", '.andExpect(header().string(HttpHeaders.WWW_AUTHENTICATE, "Bearer resource_metadata=\\"'
     'http://localhost/.well-known/oauth-protected-resource\\""));\n'),
    ("bearer challenge with error", 'assertThat(response.getHeader("WWW-Authenticate")).isEqualTo("Bearer error=\\"'
     'invalid_token\\", error_description=\\"expired\\", resource_metadata=\\"https://acme.dev/.well-known\\"");\n'),
    ("bearer error code", '.header("Authorization", "Bearer insufficiently_scoped"))\n'),
    # spring-security's tests: Basic of a label with what a test of encoding adds (`clientId:clientSecret%3D`,
    # `user:pass:word`).
    ("basic encoded label", '.isEqualTo("Basic Y2xpZW50SWQ6Y2xpZW50U2VjcmV0JTNE");\n'),
    # spring-security's WebAuthn script: a negation of a parameter's attribute; its Kotlin docs: a nullable type.
    ("negated attribute", "function read(options) {\n  const decodedAllowCredentials = !options.allowCredentials\n"
     "    ? []\n    : options.allowCredentials.map((c) => c.id)\n}\n"),
    ("nullable type", "[source,kotlin]\n----\nclass CustomUser(\n    username: String?,\n    password: String?,\n)\n"
     "----\n"),
    ("basic label with a colon", 'request.header(HttpHeaders.AUTHORIZATION, "Basic dXNlcjpwYXNzOndvcmQ=");\n'),
]  # fmt: skip

#: The same shapes holding a secret: (what, text, the value that must be found).
SECRETS = [
    ("github token", "    ['echo https://ghp_n8K2wQ5eL1bV7mY4pX9cZ3aR6fT0sH2uJ5oI@github.com/acme/app'],\n",
     "ghp_n8K2wQ5eL1bV7mY4pX9cZ3aR6fT0sH2uJ5oI"),
    ("access key", "outscale_sd_configs:\n  - access_key: Q7X2M9K4T1B8W5R3Z6N0\n", "Q7X2M9K4T1B8W5R3Z6N0"),
    ("bearer token", '\treq.Header.Set("Authorization", "Bearer Zq7Lm3Xp9Kt2Wv8Rb5")\n', "Zq7Lm3Xp9Kt2Wv8Rb5"),
    ("secret after a session", '      iex> 1 + 1\n      2\n\nconfig :app, secret: "q8wz1e2rt5yu7io9pa3sd4fg6hj0kl"\n',
     "q8wz1e2rt5yu7io9pa3sd4fg6hj0kl"),
    ("csharp literal", "using System;\n\nclass Db\n{\n    const string Password = \"T9#kv2!LmQ8z\";\n}\n",
     "T9#kv2!LmQ8z"),
    ("env line after csharp", "using System;\n\nclass Db { }\n\nDB_PASSWORD=Winter2024!\n", "Winter2024!"),
    ("generated value in an xunit test", "public class ApiTests\n{\n    [Fact]\n    public void Calls()\n    {\n"
     "        var key = \"Xk92jd0qLm7vTb3zQw1e\";\n    }\n}\n", "Xk92jd0qLm7vTb3zQw1e"),
    ("generated value in a markdown example", "## Setup\n\n```sh\nexport API_TOKEN=Xk92jd0qLm7vTb3zQw1e\n```\n",
     "Xk92jd0qLm7vTb3zQw1e"),
    ("word password after an unclosed fence", "```\nDB_PASSWORD=Winter2024!\n", "Winter2024!"),
    ("word password in env", "HOME=/root\nDB_PASSWORD=Winter2024!\n", "Winter2024!"),
    # prometheus' azuread test data: a word password spelled with signs stays one in config, as `P%40SSWORD` does
    # in a URL (test_detect.py).
    ("leet word", "azuread:\n  oauth:\n    client_secret: Cl1ent$ecret!\n", "Cl1ent$ecret!"),
    ("query key", '{"url": "https://api.example.net/v1?key=Xk92jd0qLm7vTb3zQw1e\\u0026page=2"}\n',
     "Xk92jd0qLm7vTb3zQw1e"),
    ("options-like secret", 'DB_PASSWORD="fish,chips,salt=Xk92jd0q"\n', "fish,chips,salt=Xk92jd0q"),
    # A properties file of settings, not of messages, keeps its word password; a bundle keeps a generated value,
    # and a command line's password stays one.
    ("properties password", "spring.datasource.url=jdbc:postgresql://db/app\nspring.datasource.username=app\n"
     "spring.datasource.password=Winter2024!\n", "Winter2024!"),
    ("generated value in a bundle", "Manager.accessDenied=Acceso denegado\nProvider.badCredentials=Credenciales "
     "err\\u00F3neas\nProvider.locked=La cuenta est\\u00E1 bloqueada\nProvider.apiSecret=Xk92jd0qLm7vTb3zQw1e\n",
     "Xk92jd0qLm7vTb3zQw1e"),
    ("password before a command", "PGPASSWORD=koala psql -h db.acme.dev app\n", "koala"),
    # An LDIF entry keeps a generated password; a word password after a strong key in an env file stays one.
    ("ldif generated password", "dn: uid=rod,ou=people,dc=acme,dc=org\nobjectclass: person\nuid: rod\n"
     "userPassword: Xk92jd0qLm7vTb3zQw1e\n", "Xk92jd0qLm7vTb3zQw1e"),
    ("ldap password in env", "LDAP_URL=ldap://ldap.acme.dev\nLDAP_ADMIN_PASSWORD=koala\n", "koala"),
    ("other word after a user", '<user name="bob" password="koala42" authorities="ROLE_A" />\n', "koala42"),
    ("basic encoded secret", '.isEqualTo("Basic Y2xpZW50SWQ6WGs5MmpkMHFMbTd2JTNE");\n',
     "Y2xpZW50SWQ6WGs5MmpkMHFMbTd2JTNE"),
    ("basic word with a colon", '.header(AUTHORIZATION, "Basic dXNlcjprb2FsYTo0Mg==");\n', "dXNlcjprb2FsYTo0Mg=="),
    ("negated word in env", "HOME=/root\nAPI_SECRET=!Xk92jd0qLm7v\n", "!Xk92jd0qLm7v"),
    ("nullable-looking password", "db:\n  password: Strong?\n", "Strong?"),
    ("bearer token with padding", '.header("Authorization", "Bearer Zq7Lm3Xp9Kt2Wv8Rb5=")\n', "Zq7Lm3Xp9Kt2Wv8Rb5="),
]  # fmt: skip


@pytest.mark.parametrize(("what", "text"), FALSE_ALARMS, ids=[what for what, _ in FALSE_ALARMS])
def test_a_fresh_false_alarm_is_no_secret(what: str, text: str) -> None:
    assert [f.value for f in find_secrets(text)] == []


@pytest.mark.parametrize(("what", "text", "value"), SECRETS, ids=[what for what, _, _ in SECRETS])
def test_the_same_shape_holding_a_secret_is_found(what: str, text: str, value: str) -> None:
    assert [f.value for f in find_secrets(text)] == [value]
