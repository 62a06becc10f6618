"""A stand-in embedding function for tests whose subject is not the model: hashed words, no model to load."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function


class WordHashEmbedding(EmbeddingFunction[Documents]):
    """A stand-in for another model (the seam under test is the choice, not the model): hashed words."""

    def __init__(self, dims: int = 512) -> None:
        self.dims = dims

    def __call__(self, input: Documents) -> Embeddings:
        out = []
        for text in input:
            vector = np.zeros(self.dims, dtype=np.float32)
            for word in re.findall(r"\w+", text.lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
            out.append(vector / max(float(np.linalg.norm(vector)), 1e-9))
        return out

    @staticmethod
    def name() -> str:
        return "offprompt-test-word-hash"

    def get_config(self) -> dict[str, Any]:
        return {"model": f"word-hash-{self.dims}", "dims": self.dims}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> WordHashEmbedding:
        return WordHashEmbedding(int(config.get("dims", 512)))


register_embedding_function(WordHashEmbedding)  # type: ignore[no-untyped-call]
