"""What every command shares: which memory the flags name, and how a command fails."""

from __future__ import annotations

import argparse
from pathlib import Path

from offprompt.config import OffpromptSettings, load_config
from offprompt.memory.settings import MemorySettings, default_data_dir
from offprompt.memory.storage import EmbeddingSpec


def memory_settings(settings: OffpromptSettings) -> MemorySettings:
    """The memory a config's `offprompt` block describes."""
    return MemorySettings(
        name=settings.memory_name,
        data_dir=settings.data_dir or default_data_dir(),
        chroma=settings.chroma.mode,
        chroma_url=settings.chroma.url,
        postgres=settings.postgres,
        chroma_token=settings.chroma.auth_token,
        ttl_seconds=settings.ttl_days * 86400 if settings.ttl_days else None,
        max_bytes=settings.max_bytes,
        indexer=settings.indexer,
        cache_bytes=settings.cache_bytes,
        secrets_key=settings.secrets_key,
        records_max_bytes=settings.records_max_bytes,
        embedder_niceness=settings.embedder_niceness,
        embedding=EmbeddingSpec(settings.embedding.name, dict(settings.embedding.config)),
    )


def settings_from(args: argparse.Namespace) -> OffpromptSettings:
    """The `offprompt` settings of `--config` (if given) with `--memory-name` and `--data-dir` applied."""
    config: Path | None = getattr(args, "config", None)
    base = load_config(config).settings if config is not None else OffpromptSettings()
    return base.override(memory_name=getattr(args, "memory_name", None), data_dir=getattr(args, "data_dir", None))


def data_dir_of(args: argparse.Namespace) -> Path:
    return (settings_from(args).data_dir or default_data_dir()).expanduser()
