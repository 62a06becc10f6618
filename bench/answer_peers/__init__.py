"""Tokens to answer beside sift-gateway and context-mode: `python -m bench.answer_peers` (see __main__.py)."""
