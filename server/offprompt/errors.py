"""offprompt's exceptions. Every message says what went wrong and what to do next.

    OffpromptError
    ├── ConfigError              the config file or a flag is wrong; names the field
    ├── MemoryLockedError        another process holds the memory's data directory
    ├── NotFoundError            no such namespace or item
    ├── InvalidArgumentError     a tool argument is out of range (offset, regex, top_k)
    ├── IncompatibleStoreError   a stored collection was built by another embedding function
    └── DownstreamError          a proxied server failed
        ├── DownstreamUnavailableError   it failed to start, or died
        └── DownstreamTimeoutError       a call took longer than its timeout

Two boundaries turn these into `isError` results: `results.ResultBoundary` for proxied and wrapped tools,
`tools.call` for the memory tools.
"""

from __future__ import annotations


class OffpromptError(Exception):
    """Base of every error offprompt raises on purpose."""


class ConfigError(OffpromptError):
    """The config file or a command-line flag is wrong."""


class MemoryLockedError(OffpromptError):
    """Another process holds the memory's data directory."""


class NotFoundError(OffpromptError):
    """No such artifact namespace or item."""


class InvalidArgumentError(OffpromptError):
    """A tool argument is out of range or malformed."""


class IncompatibleStoreError(OffpromptError):
    """The stored vectors were made by a different embedding function than the one configured."""


class DownstreamError(OffpromptError):
    """A proxied MCP server failed."""


class DownstreamUnavailableError(DownstreamError):
    """A proxied server could not be started or reached, or it died."""


class DownstreamTimeoutError(DownstreamError):
    """A proxied call took longer than its timeout."""
