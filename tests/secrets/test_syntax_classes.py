"""The false-alarm classes an outside comparison found on public repositories the rules were never fitted on
(ansible, rails, bitnami's Helm charts), each on lines of the same shape written here, and the secrets of the same
shapes that must stay found. The value of a key = value finding counts only when it is a literal of the text's
kind; a value that names one of the text's own things is no secret."""

from __future__ import annotations

import pytest

from offprompt.secrets import find_secrets

#: (what the line is, the text): no secret in any.
FALSE_ALARMS = [
    # Code as the value. PowerShell's objects and hashtables (ansible's Windows modules' docs and tests).
    ("powershell object", "$Password = New-Object -TypeName System.Security.SecureString\n"),
    ("powershell hashtable", "$Credentials = @{\n    UserName = $env:ADMIN_USER\n}\n"),
    # Rails' generated controller tests: an instance variable's attribute.
    ("ruby attribute", "    patch user_url(@user), params: { user: { password: @user.password } }\n"),
    # bitnami's charts: a Helm template's function call.
    ("helm function", '{{- $rootPassword := randAlphaNum 16 | b64enc | quote -}}\n'),
    ("helm function in a value", "  password: {{ randAlphaNum 10 | quote }}\n"),
    # A regular expression as the value (a validation rule of a config).
    ("regex", "  password_pattern: '^(?=.*[A-Z])(?=.*\\d).{8,}$'\n"),
    # PHP and Elixir code: a constant, a call.
    ("php class constant", "<?php\n\nreturn [\n    'password' => HashCaster::class,\n];\n"),
    ("elixir call", "defmodule App.Users do\n  def login do\n    login(password: valid_password())\n  end\nend\n"),
    # A name of the text's own things: a Kubernetes Secret named, then referred to by name (bitnami's values).
    (
        "kubernetes secret name",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds-7x2\n---\nauth:\n  existingSecret: db-creds-7x2\n",
    ),
    ("tls secret name", "spec:\n  tls:\n    - hosts: [shop.internal]\n      secretName: shop-tls-2024\n"),
    # ansible's inventory tests: a list entry's `key:` names the entry.
    ("list entry key", "hostvars:\n  - key: hostvar0\n    value: 12\n  - key: hostvar1\n    value: 13\n"),
    # Prose, a CLI word, an enum: rails' docs, ansible's user module, a Docker image's switch.
    ("cli word", "Edit them with `bin/rails credentials:edit` and restart.\n"),
    ("enum always", "- name: add the user\n  user:\n    name: deploy\n    update_password: always\n"),
    ("enum yes", "services:\n  db:\n    environment:\n      MYSQL_ALLOW_EMPTY_PASSWORD: yes\n"),
    ("enum on_create", "    update_password: on_create\n"),
    # Placeholders.
    ("placeholder", "grafana:\n  adminPassword: CHANGE_ME\n"),
    ("placeholder words", "export API_TOKEN=REPLACE_WITH_YOUR_TOKEN\n"),
    # Word passwords in tests and docs (rails' and laravel's tests, minio's README).
    ("php test word", "<?php\n\nclass LoginTest extends TestCase\n{\n    public function testLogin(): void\n    {\n"
     "        $this->post('/login', ['password' => 'qwerty']);\n    }\n}\n"),
    ("elixir test word", "defmodule AppWeb.LoginTest do\n  use ExUnit.Case\n\n  test \"signs in\" do\n"
     "    assert login(%{\"password\" => \"hunter42\"})\n  end\nend\n"),
    ("doc example", "# Running\n\nStart the server:\n\n```sh\nMINIO_ROOT_USER=admin MINIO_ROOT_PASSWORD=minio123 minio "
     "server /data\n```\n"),
]  # fmt: skip

#: The same shapes holding a secret: (what, text, the value that must be found).
SECRETS = [
    ("env dump word password", "HOME=/root\nDB_PASSWORD=Winter2024!\nSHLVL=1\n", "Winter2024!"),
    ("ci log word password", "2026-07-01T10:00:00Z export DB_PASSWORD=Winter2024!\n", "Winter2024!"),
    ("config word password", "database:\n  password: Winter2024!\n", "Winter2024!"),
    ("yaml random secret", "auth:\n  existingSecret: Xk92jd0qLm7vTb3zQw1e\n", "Xk92jd0qLm7vTb3zQw1e"),
    ("quoted literal in code", "<?php\n\n$password = 'T9#kv2!LmQ8z';\n", "T9#kv2!LmQ8z"),
    ("powershell literal", '$Password = "T9#kv2!LmQ8z"\n', "T9#kv2!LmQ8z"),
    ("random in a php test", "<?php\n\nclass ApiTest extends TestCase\n{\n    public function testCall(): void\n    {\n"
     "        $this->call(['token' => 'ghx9Qz2LmT7vKp3RwY8d']);\n    }\n}\n", "ghx9Qz2LmT7vKp3RwY8d"),
    (
        "env dump after printed code",
        "$ cat main.go\npackage main\n\nfunc main() {}\n$ env\nHOME=/root\nDB_PASSWORD=Winter2024!\n",
        "Winter2024!",
    ),
    ("list entry value", "env:\n  - name: API_TOKEN\n    value: Xk92jd0qLm7vTb3zQw1e\n", "Xk92jd0qLm7vTb3zQw1e"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "text"), FALSE_ALARMS, ids=[what for what, _ in FALSE_ALARMS])
def test_a_value_that_is_no_literal_or_a_name_is_no_secret(what: str, text: str) -> None:
    assert [f.value for f in find_secrets(text)] == [], what


@pytest.mark.parametrize(("what", "text", "value"), SECRETS, ids=[what for what, _, _ in SECRETS])
def test_a_literal_of_the_same_shape_is_still_a_secret(what: str, text: str, value: str) -> None:
    assert [f.value for f in find_secrets(text)] == [value], what
