"""offprompt's exceptions. Every message says what went wrong and what to do next.

    OffpromptError
    ├── ConfigError              the config file or a flag is wrong; names the field
    ├── MemoryLockedError        another process holds the memory's data directory
    ├── NotFoundError            no such namespace or item
    ├── InvalidArgumentError     a tool argument is out of range (offset, regex, top_k, a jq expression)
    ├── LimitExceededError       a jq expression ran past its time, output or memory limit
    ├── SearchTimeLimitError     a search ran past its time limit (a backtracking regex)
    ├── IncompatibleStoreError   a stored collection was built by another embedding function
    ├── QuotaError               a result is bigger than the memory's whole quota (max_bytes)
    ├── ResultTimeoutError       a result took longer than its call's timeout to look at and store
    ├── StoreUnavailableError    a shared memory's database (PostgreSQL) can't be reached
    ├── UnknownSecretError       a call's arguments hold a secret handle this caller was not given
    │   └── SecretNotSharedError a handle whose value may not go to the called server (`share_with`)
    ├── ReferenceRefusedError    a `⟦memory:…⟧` argument that can't be filled in, or may not go to that server
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


class CredentialsRefusedError(ConfigError):
    """A shared memory's PostgreSQL or Chroma server refused offprompt's login or token: calling again won't help."""


class MemoryLockedError(OffpromptError):
    """Another process holds the memory's data directory."""


class NotFoundError(OffpromptError):
    """No such artifact namespace or item."""


class InvalidArgumentError(OffpromptError):
    """A tool argument is out of range or malformed."""


class LimitExceededError(OffpromptError):
    """A memory_select expression or a memory_grep search was stopped by one of its limits (time, output, memory)."""


class SearchTimeLimitError(OffpromptError):
    """A search ran past its time limit and was stopped."""


class IncompatibleStoreError(OffpromptError):
    """The stored vectors were made by a different embedding function than the one configured."""


class QuotaError(OffpromptError):
    """A result is bigger than the memory's quota, so storing it would evict everything, itself included."""


class ResultTimeoutError(OffpromptError):
    """A result took longer than its call's `timeout_seconds` to look at and store; nothing of it was kept."""


class StoreUnavailableError(OffpromptError):
    """A shared memory's database (PostgreSQL) can't be reached: this call failed, the next one tries again."""


class UnknownSecretError(OffpromptError):
    """A proxied call's arguments hold a secret handle that is unknown or belongs to another caller."""


class SecretNotSharedError(UnknownSecretError):
    """A proxied call's arguments hold a handle whose value came from a server that does not share with this one."""


class ReferenceRefusedError(OffpromptError):
    """A proxied call's arguments hold a `⟦memory:…⟧` reference that is malformed, unknown, another caller's, too
    big, of the wrong kind for its argument, or whose output may not go to the called server: nothing is sent."""


class DownstreamError(OffpromptError):
    """A proxied MCP server failed."""


class DownstreamUnavailableError(DownstreamError):
    """A proxied server could not be started or reached, or it died."""


class DownstreamTimeoutError(DownstreamError):
    """A proxied call took longer than its timeout."""
