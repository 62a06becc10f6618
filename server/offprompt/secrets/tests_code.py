"""Whether a place in a text is in test code (a test file, its fixtures above its first test too), in a doc's
example (a Markdown code block) or in a comment of code (a doc comment's example).

A test's credentials are made up for it (`password = "secr3t"`, `postgresql://user:p4ss@host/db`): a handle in
their place alters the code a coding agent reads and edits, and guards nothing. A value of a test that looks
generated (16 characters or more, letters and digits) is still a secret: it may be a real key pasted into a test,
and no rule can tell (docs/secrets.md, "Left alone").
"""

from __future__ import annotations

import bisect
import re

from offprompt.secrets.scan import once
from offprompt.syntax import code_language, is_comment_line

__all__ = ["in_ldif_entry", "in_made_up_place", "in_test", "in_test_literal"]

#: A line of test code: Python's test frameworks and test functions and classes, JavaScript's suites and cases,
#: Go's `testing`, Rust's test attributes, Perl's Test:: modules, JUnit's annotation and import, RSpec; PHPUnit's test
#: classes and methods, ExUnit's cases and Rails' (`test "…" do`); xUnit's, NUnit's and MSTest's attributes
#: (`[Fact]`, `[Test]`, `[TestMethod]`), XCTest, ScalaTest's and specs2's suites (`extends AnyFlatSpec`).
_TEST_LINE = re.compile(
    r"^[ \t]*(?:"
    r"import[ \t]+(?:pytest|unittest)\b|from[ \t]+(?:pytest|unittest)\b"
    r"|(?:async[ \t]+)?def[ \t]+test_?\w*[ \t]*\(|class[ \t]+Test\w*[ \t]*[(:]|class[ \t]+\w+\([\w.]*TestCase\)"
    r"|(?:describe|it|test)[ \t]*\([ \t]*['\"`]"
    r"|(?:import[ \t]+)?\"testing\"$|func[ \t]+Test\w+\([ \t]*\w+[ \t]+\*testing\.T\)"
    r"|#\[(?:test|cfg\(test\))\]"
    r"|use[ \t]+Test::\w+"
    r"|@Test\b"
    r"|RSpec\.describe\b"
    r"|class[ \t]+\w+[ \t]+extends[ \t]+[\w\\]*TestCase\b|public[ \t]+function[ \t]+test\w*[ \t]*\("
    r"|use[ \t]+ExUnit\.Case(?:Template)?\b|(?:test|describe)[ \t]+\"[^\"\n]*\"(?:[ \t]*,[^\n]*)?[ \t]+do$"
    r"|class[ \t]+\w+[ \t]*<[ \t]*[\w:]*TestCase\b"
    r"|\[(?:Fact|Theory|Test|TestMethod|TestCase)\b[^\]\n]*\]"
    r"|import[ \t]+XCTest\b|import[ \t]+(?:static[ \t]+)?org\.junit\b"
    r"|class[ \t]+\w+[ \t]+extends[ \t]+\w*(?:Spec|Suite|Specification)\b"
    r")",
    re.MULTILINE,
)


def _test_starts(text: str) -> int:
    """Where test code starts: a test file's top (its fixtures too), or Rust's `#[cfg(test)]` after a module's code."""
    found = _TEST_LINE.search(text)
    return len(text) + 1 if found is None else found.start() if found.group().lstrip().startswith("#[") else 0


def in_test(text: str, at: int) -> bool:
    """Whether `at` is in test code (looked for once per scan)."""
    return once(text, "test code starts", lambda: _test_starts(text)) <= at


def in_test_literal(text: str, at: int) -> bool:
    """Whether `at` is in a string literal of test code (`in_test`), with a quote before it on its line
    (`password = "secr3t"`, `mask("postgresql://user:p4ss@db")`). A `KEY=value` line is no literal: a
    log that prints a failed test's source and then the environment (`DB_PASSWORD=Winter2024`) keeps its secrets."""
    if not in_test(text, at):
        return False
    line_start = text.rfind("\n", 0, at) + 1
    return any(quote in text[line_start:at] for quote in "\"'`")


#: A fence of a Markdown code block (```` ``` ```` or `~~~`), as a doc writes its examples.
_FENCE = re.compile(r"^[ \t]{0,3}(?:```|~~~)", re.MULTILINE)


def in_made_up_place(text: str, at: int) -> bool:
    """A test's string literal, a doc's example, a comment's line of code (`--   password = "doe",`) or an LDIF
    entry: a value there that does not look generated is made up."""
    in_comment = is_comment_line(text, at) and once(text, "code language", lambda: code_language(text)) != ""
    return in_comment or in_test_literal(text, at) or in_doc_example(text, at) or in_ldif_entry(text, at)


#: An LDIF entry's first line (RFC 2849): `dn: uid=rod,ou=people,…`.
_LDIF_DN = re.compile(r"^dn::?[ \t]", re.MULTILINE | re.IGNORECASE)


def in_ldif_entry(text: str, at: int) -> bool:
    """Whether `at` is in an LDIF entry (from its `dn:` line to a blank line): a directory's seed records, which
    write a word password in the clear for a test server's people; a live directory's export gives its hash."""
    if not once(text, "ldif", lambda: _LDIF_DN.search(text) is not None):
        return False  # most texts hold no entry, and a table of passwords is not read back line by line
    blank = text.rfind("\n\n", max(0, at - 4000), at)
    return _LDIF_DN.search(text, blank + 1 if blank >= 0 else max(0, at - 4000), at) is not None


def in_doc_example(text: str, at: int) -> bool:
    """Whether `at` is inside a closed fenced code block (an odd number of fences before it, one after): a doc's
    example. A log or an `env` dump has no fences, and keeps its word passwords."""
    fences = once(
        text, "fences", lambda: [f.start() for f in _FENCE.finditer(text)] if "``" in text or "~~" in text else []
    )
    before = bisect.bisect(fences, at)
    return before % 2 == 1 and before < len(fences)
