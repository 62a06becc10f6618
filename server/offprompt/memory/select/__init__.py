"""memory_select's engine: jq over stored JSON in killable worker processes, and token-bounded pages of its result."""

from offprompt.memory.select.paging import Page, page
from offprompt.memory.select.selector import LINES, Selection, SelectLimits, Selector, Source

__all__ = ["LINES", "Page", "SelectLimits", "Selection", "Selector", "Source", "page"]
