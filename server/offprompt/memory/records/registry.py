"""The record readers, most specific first: the detector takes the first whose syntax the text's head fits.

A commit log and a test run are told by lines no table has; a Markdown table before CSV (its `|` rows would
read as one column); stanzas of `Key: value` lines before tables (`pip show`'s `Name: x` would read as a
header over columns); `ls -l` before other columns (it has no header); logs last (a test run's lines may carry
timestamps too), and of them the lines without timestamps, read by their mined templates, the very last (any
text of repeated line shapes). Adding a kind is one module and one line here.
"""

from __future__ import annotations

from typing import Final

from offprompt.memory.records.base import RecordReader
from offprompt.memory.records.columns import ColumnsReader
from offprompt.memory.records.commits import CommitsReader
from offprompt.memory.records.delimited import DelimitedReader
from offprompt.memory.records.listing import ListingReader
from offprompt.memory.records.logs import LogReader
from offprompt.memory.records.markdown_tables import MarkdownTableReader
from offprompt.memory.records.stanzas import StanzasReader
from offprompt.memory.records.templates import TemplateLogReader
from offprompt.memory.records.tests_cargo import CargoTestReader
from offprompt.memory.records.tests_go import GoTestReader
from offprompt.memory.records.tests_jest import JestReader
from offprompt.memory.records.tests_junit import JUnitReader
from offprompt.memory.records.tests_pytest import PytestReader
from offprompt.memory.records.tests_unittest import UnittestReader

READERS: Final[tuple[RecordReader, ...]] = (
    CommitsReader(),
    PytestReader(),
    GoTestReader(),
    CargoTestReader(),
    JestReader(),
    JUnitReader(),
    UnittestReader(),
    StanzasReader(),
    MarkdownTableReader(),
    DelimitedReader(),
    ListingReader(),
    ColumnsReader(),
    LogReader(),
    TemplateLogReader(),
)
