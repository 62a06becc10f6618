"""A small reader of a text's syntax around one `key = value`: whether the value is a literal of the text's kind
(a quoted string in code; a scalar in YAML, JSON, TOML, INI, `.env` and `KEY=value` lines), an expression of code
(a call, an attribute, a variable, a template's function), or a name of the text's own things (an entry's `key:`,
a name the text defines with `name:`). At the bottom of the package, so the secret detector and chunking may both
read it; it knows nothing of secrets.

A value it cannot decide is `UNKNOWN`: the reader only ever rules a value out, never in.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = [
    "EXPRESSION",
    "LITERAL",
    "NAME",
    "UNKNOWN",
    "Reading",
    "code_language",
    "defined_names",
    "is_bare_code",
    "is_code_shaped",
    "is_comment_line",
    "read_value",
]

Reading = Literal["literal", "expression", "name", "unknown"]
LITERAL: Final = "literal"
EXPRESSION: Final = "expression"
NAME: Final = "name"
UNKNOWN: Final = "unknown"

#: A line only code writes, in any language: one that opens or closes a block or a call, or ends a statement
#: (`{`, `}`, `;`, `(`, `[`, `->`, `).`, `end`), one that gives a field its type (`pw_passwd : Char*`), or one
#: that starts with a word of code's structure (`function`, `local`, `def`, `fn`, `let`, `struct`, `if`, `return`,
#: ...) not used as a key (`type: string`). A line of YAML, INI, `.env`, a log or prose is none of them.
_CODE_LINE = re.compile(
    r"^[ \t]*(?:.*(?:[{};(\[]|->|\)\.)[ \t]*$|[)\]}]+[;,]?[ \t]*$|end\b[ \t]*[),;.]*[ \t]*$"
    r"|\w+[ \t]+:[ \t]+[A-Z][A-Za-z]*\d{0,2}\**[ \t]*$"
    r"|(?:function|local|def|defp?|fn|fun|func|let|var|val|const|struct|class|module|lib|interface|impl|import"
    r"|package|namespace|using|public|private|protected|static|return|if|elif|elsif|else|for|foreach|while|switch"
    r"|case|match|try|catch|do|then|begin|defmodule|require|include|use|type|enum)\b(?![ \t]*[:=]).*$)",
    re.MULTILINE,
)
#: A line of a comment or of a config's, which tells neither way (`#`, `//`, `--`, `/*`, `*`, `;`, `%`, `(*`).
_NEUTRAL_LINE = re.compile(r"^[ \t]*(?:$|#|//|--|/?\*|;|%|\(\*)", re.MULTILINE)


def code_language(text: str) -> str:
    """A text's kind by its syntax, whatever the language: "code" when, of its lines that are no comment
    (up to 400 of them), more than a fifth written only as code writes them; "" otherwise (config, a log, prose,
    a document with code blocks), where a bare value stays a value."""
    lines = neutral = coded = 0
    for line in text[:40_000].splitlines()[:400]:
        if line.lstrip().startswith(("```", "~~~")):
            return ""  # a document with examples in code blocks (Markdown's), whose `#` lines are headings
        lines += 1
        if _NEUTRAL_LINE.match(line):
            neutral += 1
        elif _CODE_LINE.match(line):
            coded += 1
    counted = lines - neutral
    return "code" if coded * 5 > counted else ""


#: A comment's line: `--`, `//`, `#`, `*` of a block comment, `;;`, `%`, `(*` first on the line.
_COMMENT = re.compile(r"[ \t]*(?:--|//|#|/?\*|;;|%|\(\*)")


def is_comment_line(text: str, at: int) -> bool:
    """Whether the line `at` is on starts as a comment does (in code; a config's `#` line starts so too)."""
    return _COMMENT.match(text, text.rfind("\n", 0, at) + 1) is not None


#: A bare value that can only be code: an instance variable's attribute or call (`@user.password`, `@c.get(`),
#: PowerShell's
#: hashtable or array (`@{`, `@(`), a class's constant or member (`HashCaster::class`), an Erlang module's call
#: (`:crypto.hash(`), a qualified name opening a call or a literal (`socks5.StaticCredentials{`), a template's
#: tag inside the value (`valid_<%= schema %>`).
_CODE_VALUE = re.compile(
    r"^@(?:[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?:$|\()|[{(])|^[A-Z]\w*::[A-Za-z_]\w*$|^:[a-z_]\w*\.\w|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+[({]|<%|\{\{"
)


def is_code_shaped(value: str) -> bool:
    """A value only code writes, however random its letters look (`socks5.StaticCredentials{`)."""
    return _CODE_VALUE.search(value) is not None


#: A number, which code writes bare as config does.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
#: An open template action before the key on its line (`{{- $rootPassword := randAlphaNum 16 }}`).
_TEMPLATE_OPEN = re.compile(r"\{\{(?!.*\}\})")
#: What follows an entry's `key:` value when the entry's `value` sits beside it: `, "value":` or the next line's.
_SIBLING_VALUE = re.compile(r"""\\?["']?[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\\?["']?value\\?["']?[ \t]*:""")
#: A name a text gives one of its things: a `name:` line's value (a Kubernetes object's, a list entry's).
_NAME_LINE = re.compile(r"""^[ \t]*(?:-[ \t]+)?name:[ \t]*["']?([\w.-]{3,253})["']?[ \t]*$""", re.MULTILINE)


def defined_names(text: str) -> frozenset[str]:
    """The names a text gives its own things with `name:` lines (read once per text)."""
    return frozenset(_NAME_LINE.findall(text))


#: The start of a line inside a string literal: an escaped line break, then spaces.
_ESCAPED_LINE = re.compile(r"\\n[ \t]*$")


def read_value(
    text: str,
    key: str,
    key_start: int,
    span: tuple[int, int],
    *,
    quoted: bool,
    code: str = "",
    names: frozenset[str] = frozenset(),
) -> Reading:
    """What the value `text[span[0]:span[1]]` of `key` (at `key_start`) is: a literal, code's expression, a name
    of the text's own things, or unknown. `quoted`: it was read between quotes; `code`: the text's language by
    `code_language` ("" when it is no code the reader knows); `names`: the text's `defined_names`."""
    value_start, value_end = span
    value = text[value_start:value_end]
    line_start = text.rfind("\n", 0, key_start) + 1
    before_key = text[line_start:key_start]
    operator = text[key_start + len(key) : value_start]
    if _ESCAPED_LINE.search(before_key) or (before_key.endswith("\\") and key[:1] == "n"):  # `\naws_…` read as a key
        code = ""  # a line of data inside a string (`"[default]\\naws_secret_access_key = …"`): config, not code
    if operator == "=" and before_key[-1:] in ("'", '"') and text.startswith(("\\n", "&"), value_end):
        code = ""  # a string of pairs: a `.env`'s lines (`"APP_KEY=…\\nAPP_ENV=local"`), a query (`"oauth_token=…&…"`)
    if key.lower() == "key" and _names_an_entry(text, before_key, value_end):
        return NAME
    if not quoted and _NUMBER.fullmatch(value) is None and _is_expression(value, before_key, operator, code):
        return EXPRESSION
    if not quoted and text[value_end : value_end + 2] in ("<%", "{{"):
        return EXPRESSION  # a template's tag goes on (`password: valid_<%= schema.singular %>_password()`)
    if value in names or (not quoted and _colon_word(text, before_key, value_start, value_end)):
        return NAME
    return LITERAL if quoted or not code else UNKNOWN


#: A value of words, as a command's or a reference's parts are (`edit`, `tls:ca`, `my-secret:clientId`).
_WORDY = re.compile(r"[A-Za-z][A-Za-z_:-]*\d{0,2}")


def _colon_word(text: str, before_key: str, value_start: int, value_end: int) -> bool:
    """`key:value` with no space after the colon, which YAML does not read as a mapping: a command's word
    (`bin/rails credentials:edit`) or a chain of them (a generator's `password:string:redact`)."""
    if text[value_start - 1 : value_start] != ":" or text[value_start - 2 : value_start - 1] in ("", " ", "\t"):
        return False
    if _WORDY.fullmatch(text[value_start:value_end].rstrip("`")) is None:
        return False  # `vault:secret:Xk92jd0q!x`: a generated value in a chain stays a value
    if text[value_end : value_end + 1] == ":" or re.search(r"\w:$", before_key):
        return True  # a chain: `password:string:redact`, `urn:k8s:secret:tls:ca`
    words = before_key.split()
    return bool(words) and before_key[-1:] in (" ", "\t", "`") and not any(c in words[-1] for c in ":=")


#: The start of a `KEY=value` line of an environment or a shell (`export DB_PASSWORD=…`), or of the next pair of a
#: list of them (`"AccessKeyId=AKIA…, RawSecretAccessKey=…"`, a CLI's shorthand): no code writes one.
_ENV_LINE = re.compile(r"[ \t]*(?:export[ \t]+)?|.*[\s,\"'][A-Za-z_]\w*=[^\s=,()\[\]]+,[ \t]*")


def _is_expression(value: str, before_key: str, operator: str, code: str) -> bool:
    """A bare value that only code writes: any in a text of code but on a `KEY=value` line (a log that prints
    code and then the environment) or in a URL's query (`badge.svg?token=8N5S3AR3C7`), a variable's assignment
    (`$Password = New-Object`), a value inside a template's action, or a value of code's own shape."""
    return (
        (
            bool(code)
            and not (operator == "=" and (_ENV_LINE.fullmatch(before_key) or before_key.endswith(("?", "&", "/"))))
        )
        or before_key.endswith("$")
        or _TEMPLATE_OPEN.search(before_key) is not None
        or _CODE_VALUE.search(value) is not None
    )


def _names_an_entry(text: str, before_key: str, value_end: int) -> bool:
    """An entry's `key:` names the entry: a list item's (`- key: hostvar0`), or one whose `value` is beside it."""
    closing = text[value_end : value_end + 2].lstrip("\\")[:1] in ('"', "'")
    at = value_end + (2 if text[value_end : value_end + 1] == "\\" else 1) if closing else value_end
    return before_key.lstrip().startswith("- ") or _SIBLING_VALUE.match(text, at) is not None


#: Words of code that start an expression, not a value: `token = await fetch(...)`, `key: function (`.
_CODE_WORDS = frozenset(
    {
        "await", "new", "this", "self", "cls", "function", "lambda", "async", "yield", "not", "typeof",
        "require", "return", "void", "const", "let", "var", "def", "if", "else", "or", "and", "in", "is", "super",
    }
)  # fmt: skip


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


#: An attribute path of code (`settings.SECRET_KEY`, `win32api.RegEnumKey`); a generated value split by dots
#: (`Zq7.Lm3.Xp9`) has a digit in every part.
_DOTTED = re.compile(r"(?:[abglstvw]:)?[A-Za-z_$][\w$]*(?:\??\.#?[A-Za-z_$][\w$]*)+")  # Vim's `a:dict.x`


_WORD_PART = re.compile(r"(?:^|\.)[A-Za-z_$]+(?:\.|$)")


#: A call or an index of code: a name (or attribute path) and then `(` or `[`, with no password punctuation.
_CALL = re.compile(  # `CPAN::anycwd()` and Vim's `s:netrw_hup[host]` too
    r"(?:[abglstvw]:)?[A-Za-z_$][\w$.#]*(?:::[A-Za-z_$][\w$.#]*)*[(\[][^!@#%^&*~]*$"
)


_UNPACKING = re.compile(r"(?<=[(,\s])\*{1,2}(?=[A-Za-z_])")  # `*args`, `**kwargs` in a call


_POWER = re.compile(r"(?<=\d)\*\*(?=\d)")  # `randrange(2**64)`: arithmetic, no password's stars


#: Minified JavaScript's booleans (`this.pass=!1`, `withCredentials=!1`).
_MINIFIED_BOOLEANS = frozenset({"!0", "!1"})


_LEADING_NAME = re.compile(r"[A-Za-z_$][\w$]*")


#: A CSS selector's pseudo-element or -class and its rule's opening (`.fa-user-secret:before{content:…}`).
_CSS_RULE = re.compile(r"[a-z][a-z-]*(?:\([^)]{0,40}\))?\{")


def is_bare_code(text: str, value: str, span: tuple[int, int], key_end: int) -> bool:
    """Whether a bare (unquoted) value at `span` after a key ending at `key_end` is code in any text: a call, an
    index, an attribute path, an expression, a variable of the same text, or the next word of a sentence
    (`pwd: expected bytes`)."""
    called = _CALL.match(_POWER.sub("", _UNPACKING.sub("", value)))  # `Credential(**obo_kwargs)`, `randrange(2**64)`
    if called or value in _MINIFIED_BOOLEANS:
        return True  # a call, an index, minified code's `!1`
    leading = _LEADING_NAME.match(value)
    if leading and leading.group().lower() in _CODE_WORDS and value[leading.end() :][:1] in ".(:[":
        return True  # this.#c(), lambda: cred
    dotted = _DOTTED.match(value)
    if dotted and _WORD_PART.search(dotted.group()) and value[dotted.end() :][:1] in "(:[?!=|&":
        return True  # i.fail:(...), e.crossOrigin===`anonymous`?…, r.ctrlKey||!1: an operator of minified code
    at = span[0]
    if dotted and _WORD_PART.search(dotted.group()) and value[dotted.end() :][:1] in "+*":
        root = _LEADING_NAME.match(value)
        if root and _named_elsewhere(text, root.group(), at):
            return True  # o.key=s.C0.ESC+t: arithmetic on an attribute of a name of the text
    if _PRODUCT.match(value) or (_IDENTIFIER.fullmatch(value) and _INFIX.match(text, span[1])):
        return True  # styleKey=2097152*D[0]+D[1], `shared secret = PUBKEYtheirs * PRIVATEKEYours`
    if _IDENTIFIER.fullmatch(value) and _named_elsewhere(text, value, at):
        return True
    operand = _OPERAND.match(value)
    name = operand.group(1) or operand.group(2) if operand else None
    if name and _named_elsewhere(text, name, at + value.index(name)):
        return True  # `!!r`, `e?e.substring(0,10)`: a negation or a ternary on a name of the text
    if _CSS_RULE.match(value):
        return True
    return _sentence_goes_on(text, value, span, key_end)


#: A number times an index or a call (`2097152*D[0]`), as minified code writes a product.
_PRODUCT = re.compile(r"\d+[*/][A-Za-z_$][\w$.]*[\[(]")


#: After a name, an operator between spaces and another operand: an expression (`PUBKEYtheirs * PRIVATEKEYours`).
_INFIX = re.compile(r"[ \t]+[*/%^][ \t]+[A-Za-z_$(]")


#: A name or its attribute negated (`!!r`, `!options.allowCredentials`), asked a ternary's question (`e?…`) or
#: given a default (`_t??xe(39)`), as minified code writes it.
_OPERAND = re.compile(r"!{1,2}([A-Za-z_$][\w$]*)(?:\.[A-Za-z_$][\w$]*)*$|([A-Za-z_$][\w$]*)\?\??[A-Za-z_$!]")


#: Words joined by dashes, as a description starts (`Multiple-system operator`, `Base64-encoded key`,
#: `google-auth credential`): a part with digits has a word's letters before them.
_COMPOUND = re.compile(r"(?:[A-Za-z]+|[A-Za-z]{3,}\d{1,3})(?:-(?:[A-Za-z]+|[A-Za-z]{3,}\d{1,3}))*-[A-Za-z]{3,}")


#: A word with one digit after it, as names of protocols are written (`OAuth2 client secret to use`).
_VERSIONED_WORD = re.compile(r"[A-Za-z]{3,}\d")


def _sentence_goes_on(text: str, value: str, span: tuple[int, int], key_end: int) -> bool:
    """After `key: word`, a space and another word on the same line: prose (`they need not be secret: IVs are
    ...`, a field's description `password: Required. Input only.`); a `KEY: value` of YAML or a header ends with
    its value."""
    end = span[1]
    colon = ":" in text[key_end : span[0]]
    word = value.rstrip(".:")  # `Required.`, `DEPRECATED:`: the first word of a description
    plain = word.isalpha() or _COMPOUND.fullmatch(word) is not None or _VERSIONED_WORD.fullmatch(word) is not None
    wordlike = plain and len(value) - len(word) <= 1  # `password: Xk92jd0 from 10.0.0.1` stays a secret
    if text[end : end + 2] == "'s":
        end += 2  # a possessive: `password: Account's password.`
    follows = text[end + 1 : end + 2]
    return colon and wordlike and text[end : end + 1] == " " and (follows.isalpha() or follows == "`")


def _named_elsewhere(text: str, name: str, at: int) -> bool:
    """Whether `name` occurs as a whole word in `text` somewhere else than at `at`, and not as a value there (after
    `=` or `:`): a variable of the code. The same password given twice (`DB_PASSWORD=X`, `REDIS_PASSWORD=X`, or
    `postgres://app:X@db`) is a value both times, and a secret."""
    start = text.find(name)
    while start != -1:
        end = start + len(name)
        whole = (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_$")) and (
            end == len(text) or not (text[end].isalnum() or text[end] in "_$")
        )
        if whole and start != at and not _assigned_at(text, start):
            return True
        start = text.find(name, start + 1)
    return False


def _assigned_at(text: str, start: int) -> bool:
    """Whether the word at `start` is a value: the last character before it, spaces and quotes aside, is `=`/`:`."""
    before = start - 1
    while before >= 0 and text[before] in " \t'\"":
        before -= 1
    return before >= 0 and text[before] in "=:"
