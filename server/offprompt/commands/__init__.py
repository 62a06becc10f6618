"""The `offprompt` subcommands besides `serve`: the store (`memory`, `memories`), `stats` and `init`.

Each command group is a module of its own, imported only when its command runs, so `offprompt serve` starts
without them. `parsers` (standard library only) declares their arguments.
"""
