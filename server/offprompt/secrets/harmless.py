"""When the value after a secret's key holds none: a name, a label, code, a field's description, a documentation
example, a sample login (docs/secrets.md, "Left alone"). `holds_none` asks these in turn; `values` has the rules
that read the value alone.

The principle: a value is a secret unless the text says what it is instead. A bare word of a `KEY=value` line
that names nothing else in the text (`DB_PASSWORD=s3cretpass`) is still a secret."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from offprompt.secrets import values
from offprompt.secrets.exceptions import excepted
from offprompt.secrets.keyed import (
    EXAMPLE_VALUES,
    SAMPLE_LOGINS,
    basic_credentials,
    random_looking,
    repeats_user,
)
from offprompt.secrets.scan import once
from offprompt.secrets.tests_code import in_made_up_place
from offprompt.syntax import is_bare_code

__all__ = ["holds_none"]


def _word_before(text: str, start: int) -> str:
    """The word one space before `start`: `GPG` of `Release GPG key: ...`, a key's name written as prose."""
    end = start - 1
    if end < 1 or text[end] != " ":
        return ""
    begin = end
    while begin > 0 and end - begin < 20 and text[begin - 1].isalpha():
        begin -= 1
    return text[begin:end]


def holds_none(match: re.Match[str], key: str, value: str) -> bool:
    """Whether the key is one that holds no secret (`next_token`, `GPG key`), or its value is none."""
    scheme, _, credentials = value.partition(" ")
    if scheme.lower() == "basic" and basic_credentials(credentials) is not None:
        return True  # `TOKEN = "Basic bWU6cGFzcw=="`: the basic-auth detector judges what follows the scheme
    lowered = key.lower().replace("-", "_")
    key_start = match.start() - len(key) + len(match.group("word"))  # the key ends with the matched word
    prose = _word_before(match.string, key_start).lower()
    return (
        (prose != "" and excepted(f"{prose}_{lowered}", value) != "")  # `Release GPG key: …`, a key written as prose
        or _aws_request_id(match.string, key, key_start)
        or _named_not_assigned(match, key_start)
        or _names_no_secret(match, key, value)
        or _sample_login(match.string, match.start(match.lastgroup or "bare"), value)
        or _repeats_user_before(match.string, key_start, value)
        or _anonymous_login(match.string, match.start(match.lastgroup or "bare"), value)
        or _enumerated(match.string, match.start(), value)
        or _among_numbers(match.string, key_start, value)
        or _value_of_another_key(match.string, match.start(match.lastgroup or "bare"), value)
        or _setting_in_prose(match, value)
        or (not random_looking(value) and _in_field_list(match.string, key_start))
        or (not random_looking(value) and _option_in_docs(match.string, key_start, key))
        # + 1: a bare value's own opening backtick is a quote too (`` `secr3t` ``)
        or (not random_looking(value) and in_made_up_place(match.string, match.start(match.lastgroup or "bare") + 1))
        or (not random_looking(value) and _message_in_bundle(match.string, match.start()))
    )


#: A message bundle's line (Java's `.properties`): a dotted key, `=` and two words or more
#: (`Provider.badCredentials=Credenciales err\u00F3neas`); a setting's line is `key=value`, one word.
_MESSAGE_LINE = re.compile(r"^[A-Za-z][\w-]*(?:\.[\w-]+)+[ \t]*=[ \t]*[^\s=]+(?:[ \t]+[^\s=]+)+[ \t]*$", re.MULTILINE)
_SETTING_LINE = re.compile(r"^[A-Za-z][\w.-]*[ \t]*=", re.MULTILINE)


def _message_in_bundle(text: str, at: int) -> bool:
    """A message of a bundle (half its settings' lines or more are messages): prose in any language, not a
    credential; a settings file (`spring.datasource.password=…`) has one word a value."""
    line_start = text.rfind("\n", 0, at) + 1
    if _MESSAGE_LINE.match(text, line_start) is None:
        return False
    messages = once(text, "messages", lambda: (len(_MESSAGE_LINE.findall(text)), len(_SETTING_LINE.findall(text))))
    return messages[0] >= 2 and 2 * messages[0] >= messages[1]


#: The headers of a docstring's field lists (Google's style): what is under one describes a parameter.
#: Capitalized as docstrings write them; YAML's `args:` is a mapping whose values are values.
_FIELD_LISTS = frozenset({"Args:", "Arguments:", "Parameters:", "Keyword Args:", "Kwargs:", "Attributes:"})


def _holds_field_lists(text: str) -> bool:
    return once(text, "field lists", lambda: any(header in text for header in _FIELD_LISTS))


def _in_field_list(text: str, key_start: int) -> bool:
    """A key indented under a docstring's `Args:` (or `Attributes:`) header: its value is the parameter's
    description (`credentials: Unused.`, `oauth2ClientSecret: OAuth2 client secret to use`); the caller keeps a
    random token there a secret."""
    if not _holds_field_lists(text):
        return False
    lines = _lines_back(text, key_start)
    own = next(lines)
    if own.strip():
        return False  # something before the key on its line: not a field of a list
    indent = len(own)
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if len(line) - len(line.lstrip()) < indent:
            return stripped in _FIELD_LISTS
    return False


_ANONYMOUS = re.compile(r"\banonymous\b", re.IGNORECASE)


_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")


def _anonymous_login(text: str, at: int, password: str) -> bool:
    """An e-mail as the password of the user `anonymous` just before it: anonymous FTP's convention (RFC 1635),
    which grants what the server gives anyone."""
    return _EMAIL.fullmatch(password) is not None and _ANONYMOUS.search(text, max(0, at - 120), at) is not None


#: A user's name given just before a password, as code and config write it (`access_key='limited'`, `user="bob"`).
_USER_BEFORE = re.compile(
    r"""\b(?:user(?:_?name)?|name|login|access_key(?:_id)?)["']?[ \t]*[=:][ \t]*["']([\w.@-]{1,64})["']""",
    re.IGNORECASE,
)


def _repeats_user_before(text: str, key_start: int, password: str) -> bool:
    """A password that is a label of the user given just before it (`access_key='test_fs_limited_user',
    secret_key='limited123'`, as `guest:guest` in a URL): a test server's login named after its user. Another
    word (`access_key='limited', secret_key='Xk92jd0q'`) is a secret."""
    users = _USER_BEFORE.findall(text, max(0, key_start - 160), key_start)
    return bool(users) and repeats_user(users[-1], password)


def _sample_login(text: str, at: int, password: str) -> bool:
    """A sample account's password with its user named just before it (`scott:tiger@`, `UID=scott;PWD=tiger`,
    `user="scott", password="tiger"`); the same word after another user, or alone, is a secret."""
    before = text[max(0, at - 120) : at].lower()
    return any(
        password.lower() == sample and re.search(rf"\b{user}\b", before) for user, sample in SAMPLE_LOGINS.items()
    )


_CONSTANT_LINE = re.compile(r"[ \t]*[A-Z][A-Z0-9_]*[ \t]*=[ \t]*(\d{1,9})[ \t]*(?:#.*)?")


def _enumerated(text: str, at: int, value: str) -> bool:
    """A number in a run of constants numbered in sequence (`ER_NOT_VALID_PASSWORD = 1819` after `... = 1818`):
    an error code of an enumeration, not a password."""
    if not value.isdigit():
        return False
    previous, following = _neighbour_lines(text, at)
    for line, step in ((previous, -1), (following, 1)):
        constant = _CONSTANT_LINE.fullmatch(line)
        if constant and int(constant.group(1)) == int(value) + step:
            return True
    return False


#: A line of a literal mapping (JSON's, Python's) to a number: `"implicit": 3600,`.
_NUMBER_ENTRY = re.compile(r"""[ \t]*(["'])[\w.-]{1,60}\1[ \t]*:[ \t]*\d{1,12}[ \t]*,?[ \t]*""")


def _among_numbers(text: str, at: int, value: str) -> bool:
    """A number, unquoted, in a literal mapping of numbers (`"password": 864000` after `"implicit": 3600,`: a
    grant type's lifetime): an entry of a table of figures, as its neighbours are. A password is a string there;
    a number after `DB_PASSWORD =` or `password:` of a config is still a secret."""
    if not value.isdigit() or text[at - 1 : at] not in ('"', "'"):
        return False
    return any(_NUMBER_ENTRY.fullmatch(line) is not None for line in _neighbour_lines(text, at))


def _neighbour_lines(text: str, at: int) -> tuple[str, str]:
    """The line before the one `at` is on and the line after it ("" at the text's start or end)."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end == -1 else end
    previous = text[text.rfind("\n", 0, max(0, start - 1)) + 1 : max(0, start - 1)] if start else ""
    after = text.find("\n", end + 1)
    following = text[end + 1 : len(text) if after == -1 else after] if end < len(text) else ""
    return previous, following


#: A key right before a quoted value (`text     => "`, `"hidden": "`), read backwards from the quote.
_KEY_BEFORE_VALUE = re.compile(r"""([A-Za-z_][\w-]{0,60})["']?[ \t]*(?:=>|=|:)[ \t]*$""")
#: The words of a key that holds a secret (the `password` detector's).
_SECRET_KEY_WORD = re.compile(r"pass|pwd|secret|key|token|cred", re.IGNORECASE)


def _value_of_another_key(text: str, at: int, value: str) -> bool:
    """The same quoted value given to a key that holds no secret elsewhere in the text (`text => "TextInput",
    password => "TextInput"`, HTML::Form's input types): a name both keys map to. A value given to two secrets'
    keys (`DB_PASSWORD=X`, `REDIS_PASSWORD=X`) is a secret in both places."""
    if len(value) < 3:
        return False
    low, high = max(0, at - _NEARBY), at + len(value) + _NEARBY  # a mapping's keys are near: each look is bounded
    for quote in ('"', "'"):
        literal = f"{quote}{value}{quote}"
        found = text.find(literal, low, high)
        while found != -1:
            if found + 1 != at:
                key = _KEY_BEFORE_VALUE.search(text, max(0, found - 80), found)
                if key is not None and _SECRET_KEY_WORD.search(key.group(1)) is None:
                    return True
            found = text.find(literal, found + 1, high)
    return False


_NEARBY = 2000


#: After `Name=`, a space and a lower-case word ending a clause (`See LoadCredential= and SetCredential= above.`).
_PROSE_AFTER_SETTING = re.compile(r"[ \t]+[a-z]+[.,;]?(?:\s|$)")


def _setting_in_prose(match: re.Match[str], value: str) -> bool:
    """A setting's name in a sentence (`SetCredential= above.`): a space between `=` and a word of prose, which no
    `KEY=value` line of a config or an env file has."""
    text = match.string
    equals = text.rfind("=", match.end("word"), match.start(match.lastgroup or "bare"))
    return (
        equals != -1
        and value.rstrip(".,;").isalpha()
        and value.islower()
        and (_PROSE_AFTER_SETTING.match(text, equals + 1) is not None)
    )


#: A command line of documentation: a prompt, or a placeholder of the command or of a value (`$ {command} …`,
#: `--name=<your_new_lint>`).
_COMMAND_DOC = re.compile(r"^[ \t]*\$[ \t]|\{[a-z_]{1,40}\}|<[a-z][\w-]{0,40}>", re.MULTILINE)


def _option_in_docs(text: str, key_start: int, key: str) -> bool:
    """The key is a command-line option (`--password=postgres`) of a command line of documentation (a prompt, a
    placeholder on it or on a line it continues with `\\`), or names one as a mapping's key (`"--secret": "dynamic"`, a
    completer's kind): the value is an example or a description; the caller keeps a random token a secret."""
    if not key.startswith("--"):
        return False
    if text[key_start - 1 : key_start] in ('"', "'"):
        return True  # `"--secret": "dynamic"`
    lines = _lines_back(text, key_start, most=12)
    own = next(lines)
    if _COMMAND_DOC.search(own) is not None or _COMMAND_DOC.search(_rest_of_line(text, key_start)) is not None:
        return True
    for before in lines:  # the lines this one continues, back to the command's first (`$ gcloud … \`)
        if not before.rstrip().endswith("\\"):
            return False
        if _COMMAND_DOC.search(before) is not None:
            return True
    return False


def _rest_of_line(text: str, at: int) -> str:
    end = text.find("\n", at)
    return text[at : len(text) if end == -1 else end]


def _aws_request_id(text: str, key: str, key_start: int) -> bool:
    """`"ClientToken"` and `"RequestToken"`, quoted and capitalised as AWS's JSON spells them: an idempotency token
    and a request's id. Vault's `client_token` and a Go struct's `ClientToken:` are tokens."""
    return key in ("ClientToken", "RequestToken") and text[key_start - 1 : key_start] in ('"', "'")


#: Before a key, what makes it a name rather than a field holding a value: the last part of a quoted `::` path
#: (`"AWS::IAM::AccessKey"`, a CloudFormation type), a field of an ARN (`arn:aws:secretsmanager:…:secret:N`, also
#: mistyped: `aarn:aws:…`), a reST or epytext field of a docstring (`:param password:`, `@type password:`), a
#: string a ternary yields (`visible ? "password" : "text"`, an input's type).
_NAMING_BEFORE = re.compile(
    r"""(?:["'][\w:]*::|arn:[\w*-]*:[\w*-]+:[^\s"'`]*|[:@](?:param|type|ivar|cvar|var|keyword|kwarg)[ \t]+[\w.]*"""
    r"""|\?[ \t]*["'])$"""
)


def _named_not_assigned(match: re.Match[str], key_start: int) -> bool:
    """Whether the key is a name, not a field: a quoted `::` path's last part, a field of an ARN, a docstring's
    reST or epytext field, a ternary's string, or the first half of one quoted `key:name` (`"passwd:gecos"`, a
    Scheme builtin)."""
    text = match.string
    if _NAMING_BEFORE.search(text, max(0, key_start - 300), key_start):
        return True
    quote = text[key_start - 1 : key_start]
    glued = text[match.end("word") : match.start(match.lastgroup or "bare")] == ":"
    return quote in ("'", '"') and glued and match.lastgroup == "bare" and text[match.end() : match.end() + 1] == quote


def _names_no_secret(match: re.Match[str], key: str, value: str) -> bool:
    """Whether the value after a secret's key (`key` as the text spells it) is something else: in code, a name or
    an expression (`password = password`, `secret_key = settings.SECRET_KEY`, `key=itemgetter(1)`, `token = tok`
    where `tok` is a variable of the same text); anywhere, the key's own name (`_CLIENT_SECRET = 'CLIENT_SECRET'`),
    a label or a sentence (`my-client-secret`, `Password used to generate key`), data, or a documentation example
    (`password: secret`, a doctest's). A bare word of a `KEY=value` line that names nothing else in the text
    (`DB_PASSWORD=s3cretpass`) is still a secret."""
    inner = _TYPED_NEWLINE.sub("", value.strip("`"))  # `test-client-secret` of minified code, `'secret\\n'`
    if _names_itself(inner, key, match.group("word")) or _not_a_credential(value):
        return True
    if _in_doctest(match.string, match.start()) or _called_fingerprint(match.string, value):
        return True  # `>>> session.fetch_token(url)` and the answer it prints; a public key's digest
    if match.lastgroup == "bare":
        span = (match.start("bare"), match.end())
        return is_bare_code(match.string, value, span, match.end("word"))
    return _BETWEEN_LITERALS.match(value) is not None or _joined_prefix(match, value)


#: After a literal, `+` and a name: the literal is joined to a value of the code (`"_xxtpuv3internal_" + key_str`).
_JOINED = re.compile(r"[ \t]*\+[ \t]*[A-Za-z_$]")


def _joined_prefix(match: re.Match[str], value: str) -> bool:
    """A literal ending with a separator and joined to a name (`key = "_xxtpuv3internal_" + key_str`): the prefix
    of a name built at run time. A whole literal joined to nothing is still a value."""
    return value[-1:] in "_-/:." and _JOINED.match(match.string, match.end()) is not None


#: A "quoted value" that is code between two string literals: the key ended a literal (`"… arrayDefaultKey: "+t),
#: t.slice(0,-1)+"defaults"`, `[b"Password:", b"Username:"]`), so its quote closes one and the next opens one.
_BETWEEN_LITERALS = re.compile(r"""[ \t]*(?:\+[ \t]*[\w$(][^"']*\)|,[ \t]+[A-Za-z_])""")


#: A newline typed after a value (`'secret\\n'`, what pexpect sends): the label before it is still a label.
_TYPED_NEWLINE = re.compile(r"(?:\\{1,2}[rn])+$")


_HEX = re.compile(r"[0-9a-fA-F:]{16,}")


def _called_fingerprint(text: str, value: str) -> bool:
    """A hex value the same text calls a fingerprint where it gives it (`the key with a fingerprint of 'e0d96d…'`,
    and then `--key='e0d96d…'`): a public key's digest, which grants nothing."""
    if not _HEX.fullmatch(value):
        return False
    at = text.find(value)
    while at != -1:
        if "fingerprint" in text[max(0, at - 60) : at].lower():
            return True
        at = text.find(value, at + 1)
    return False


def _names_itself(value: str, key: str, word: str) -> bool:
    """The value says what it is: the key's own name, a label of the key's words, a type or a sibling name."""
    lowered = value.lower()
    squeezed = lowered.replace("-", "_").strip("_")
    own = re.sub(r"[-_.]", "", key.lower())
    if squeezed in (key.lower().replace("-", "_").strip("_"), word.lower()) or squeezed in EXAMPLE_VALUES:
        return True
    if re.sub(r"[-_.]", "", lowered) == own:
        return True  # OtpCredentials: "otp-credentials", AWS_S3_KEY = "aws.s3.key"
    if lowered.endswith(("-password", "_password", "-passwd", "_passwd")) or lowered.startswith("your-"):
        return True  # rest-of-my-password, your-api-key
    user, colon, password = value.partition(":")
    if colon and ":" not in password and " " not in value and repeats_user(user, password):
        return True  # `chroma_client_auth_credentials="admin:admin"`
    return (
        values.is_label(value, values.key_words(key))
        or values.is_type_name(value, word)
        or values.is_named_for(value, word)
        or values.abbreviates_key(value, key)
        or values.is_key_name(value)
    )


def _not_a_credential(value: str) -> bool:
    """Data, a sentence, a run of the alphabet, encoding test data, a template built at run time, an elided
    example, a name or an id of what holds a secret: nothing of these is a credential, whatever key it follows."""
    bare = value.strip("`")
    return (
        _decodes_to_phrase(bare)
        or bare.lower() in EXAMPLE_VALUES
        or values.is_sentence(bare)
        or values.is_sequence(bare)
        or values.is_counting_hex(bare)
        or values.escapes_non_ascii(bare)
        or values.is_phrase(bare)
        or values.is_alphabet_walk(bare)
    )


_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,4096}={0,2}")


def _decodes_to_phrase(value: str) -> bool:
    """Base64 of a label or a phrase of no content (`bm90IG15IHJlYWwgcGFzc3dvcmQ=`, "not my real password"): an
    example of encoding one. A generated secret's base64 decodes to bytes, not to words."""
    if len(value) % 4 or not _BASE64.fullmatch(value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return False
    return decoded.isprintable() and (values.is_phrase(decoded) or values.is_label(decoded))


#: A prompt of an interactive session a doc shows: Python's doctest, Elixir's iex, Ruby's irb, Scala's, jshell's.
_PROMPT = re.compile(r"(?:>>>|\.\.\.|iex(?:\(\d+\))?>|irb(?:\([^)]*\))?>|scala>|jshell>)(?: |$)")


def _holds_doctest_lines(text: str) -> bool:
    """Whether any line could be a session's (`>>>`, `iex>`): most texts have none, and then no line is looked at."""
    return once(text, "doctest lines", lambda: re.search(r">>>|\.\.\.|iex|irb|scala>|jshell>", text) is not None)


def _in_doctest(text: str, at: int) -> bool:
    """Whether `at` is on a line of a doctest or a session (`>>> `, `... `, `iex> `) or of the answer it prints (the
    lines after one, up to a blank line): a documentation example."""
    if not _holds_doctest_lines(text):
        return False
    lines = _lines_back(text, at)
    if _PROMPT.match(next(lines).strip()):
        return True
    for line in lines:
        stripped = line.strip()
        if not stripped:
            return False
        if _PROMPT.match(stripped):
            return True
    return False


def _lines_back(text: str, at: int, most: int = 30, reach: int = 4000) -> Iterator[str]:
    """The line of `at` (up to it), then the lines before it, nearest first: at most `most` lines within `reach`
    characters, so a long line of JSON costs no more than a short one."""
    low, end = max(0, at - reach), at
    for _ in range(most):
        newline = text.rfind("\n", low, end)
        yield text[newline + 1 if newline >= 0 else low : end]
        if newline < 0:
            return
        end = newline
