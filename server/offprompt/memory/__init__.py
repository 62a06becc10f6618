"""Task memory: storing results off the prompt, the catalog, storage and indexes, the directory lock."""
