"""What words alone find is never lost: in the hybrid ranking, BM25's first passage is always among the five shown.

The text is a service's notes: six sections that all speak of a server handling request timeouts (alike in meaning,
holding most of a question's words), and one short section on the codename the question names. By words alone the
codename's section comes first (its word is rare and said four times); fused with meaning, coverage and the lines
holding the question's words, the six sections rank above it, and before the fix it came seventh."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact
from offprompt.memory.storage.pg import schema_name
from offprompt.memory.task_memory import TaskMemory

from ..support import meta

pytestmark = pytest.mark.anyio

SECTIONS = [
    (
        "Request timeouts",
        "The server handles each request with a timeout. When a request takes longer than the timeout, the server "
        "cancels the request and answers with an error. The timeout of a request starts when the server reads its "
        "first byte.",
    ),
    (
        "Slow clients",
        "A slow client may hold a request open. The server handles a slow request by applying the read timeout, and "
        "the request is dropped once the timeout passes, so the server keeps handling the other requests.",
    ),
    (
        "Upstream calls",
        "When the server handles a request that calls an upstream service, the upstream timeout applies as well: the "
        "request fails when either timeout passes first, and the server logs which timeout it was.",
    ),
    (
        "Retries",
        "A request that failed on a timeout is retried by the server once, with a fresh timeout, when the request is "
        "idempotent. The server handles a second timeout by answering 504 to the client.",
    ),
    (
        "Keep-alive",
        "Between two requests on one connection, the server handles the idle time with the keep-alive timeout. A "
        "request arriving after that timeout finds the connection closed by the server.",
    ),
    (
        "Shutdown",
        "On shutdown the server stops accepting requests and handles those in flight until the grace timeout; a "
        "request still running when the timeout passes is cancelled by the server.",
    ),
    (
        "Codenames",
        "Zephyr. Zephyr is what the team calls the release train of the spring. Zephyr builds ship on Tuesdays; "
        "zephyr tags end in -z.",
    ),
]
QUESTION = "How does the server handle a request timeout in zephyr?"


def notes() -> str:
    return "\n\n".join(
        f"## {title}\n\n{body}\n" + "\n".join(f"- note {n}: see the {title.lower()} page." for n in range(6))
        for title, body in SECTIONS
    )


@pytest.fixture
def namespace(memory: TaskMemory) -> str:
    stored = memory.store([TextArtifact(value=notes())], tool="docs.read").namespace
    assert memory.text.wait_indexed(600)
    return stored


def test_the_words_first_passage_is_among_the_five_hybrid_shows(memory: TaskMemory, namespace: str) -> None:
    by_words, _ = memory.query(QUESTION, namespace, 1, mode="lexical")
    assert by_words[0].text.startswith("## Codenames")
    hybrid, _ = memory.query(QUESTION, namespace, 5, mode="hybrid")
    assert "## Codenames" in [h.text[: len("## Codenames")] for h in hybrid]
    assert hybrid[0].text.startswith("## Request timeouts")  # the rest keeps its order: meaning still leads


def test_it_stays_among_the_five_with_more_phrasings(memory: TaskMemory, namespace: str) -> None:
    found = memory.search(QUESTION, namespace, 5, queries=["what happens when a request times out"])
    # Whole, or within a passage grown to hold the words' first window too.
    assert any("## Codenames\n\nZephyr. Zephyr is what the team calls" in h.text for h in found.hits)


async def test_memory_query_shows_it_in_its_five_passages(client: Client, namespace: str) -> None:
    answer = await client.call_tool("memory_query", {"query": QUESTION, "artifact_namespace": namespace})
    shown = meta(answer)["results"]
    assert len(shown) == 5
    # Whole, or within a passage joined with a neighbour that shares its lines.
    assert any("## Codenames\n\nZephyr. Zephyr is what the team calls" in r["text"] for r in shown)


# The words' first window. A client's guide (the shape of a library's manual page as text, e.g. Mako's usage page)
# where six paragraphs name the option the question names, so each outranks a paragraph that does not; the answer
# is the paragraph after the one naming the option, and no chunk holds both. BM25 over the chunks ranks the
# section titled with the question's words first (its title counts four times); BM25 over windows of 800
# characters ranks first the window holding the option's paragraph end and the answer. Before the windows were
# kept, the answer was in none of the five.
_FILLER = (
    "The pool keeps idle connections per host and closes those idle for more than a minute. "
    "Each response is read in full before the connection goes back to the pool. "
    "A proxy configured in the environment is used for every host but those listed as exceptions. "
    "Cookies set by a response are kept in the client's jar and sent with later requests to the same site. "
    "Redirects are followed up to five times, keeping the method for 307 and 308 and turning others into GET. "
)
_OPTION = [
    "The client retries a failed request when retry_budget allows it; each retry spends one unit of retry_budget.",
    "Setting retry_budget to 0 turns retries off: a failed request raises at once.",
    "The retry_budget is shared by every request of one client, so a burst of failures spends it quickly.",
    "A request that failed after its body was sent is retried only when it is idempotent, whatever retry_budget "
    "is left.",
    "Each retry is logged at INFO with what is left of retry_budget, so a log shows when the budget ran out.",
    "The client exports retry_budget_remaining each second, for dashboards that watch the budget.",
]
ANSWER = "Therefore errors which occur within the handshake stage are not retried and propagate normally."
GUIDE = "\n\n".join(
    [
        *(f"{sentence} {_FILLER}" for sentence in _OPTION),
        _FILLER + "The retry_budget option applies to the response phase: errors which occur while the response is "
        "read are caught and the request is sent again.",
        "Note that the handshake of a connection occurs when the Client is constructed, before any request is "
        f"written. {ANSWER} {_FILLER}{_FILLER}",
        f"Handshake errors\n================\n\n{_FILLER}",
        f"Pools\n=====\n\n{_FILLER}",
    ]
)
GUIDE_QUESTION = "Why doesn't retry_budget retry errors that happen during the handshake?"


def test_the_words_first_window_is_among_the_five_hybrid_shows(memory: TaskMemory) -> None:
    namespace = memory.store([TextArtifact(value=GUIDE + "\n")], tool="docs.read").namespace
    shows_the_guide_window(memory, namespace)


@pytest.mark.postgres
def test_a_shared_memory_shows_the_words_first_window_among_the_five_through_every_server(
    open_memory: Callable[..., TaskMemory], chroma_url: str
) -> None:
    # Before its windows were kept in PostgreSQL, a shared memory kept the words' first chunk alone.
    a, b = open_memory(chroma="http", chroma_url=chroma_url), open_memory(chroma="http", chroma_url=chroma_url)
    namespace = a.store([TextArtifact(value=GUIDE + "\n")], tool="docs.read").namespace
    for memory in (a, b):
        shows_the_guide_window(memory, namespace)


def shows_the_guide_window(memory: TaskMemory, namespace: str) -> None:
    assert memory.text.wait_indexed(600)
    by_words, _ = memory.query(GUIDE_QUESTION, namespace, 5, mode="lexical")
    assert not any(ANSWER in h.text for h in by_words)  # what the chunks' words rank first does not hold it
    hybrid, _ = memory.query(GUIDE_QUESTION, namespace, 5, mode="hybrid")
    assert len(hybrid) == 5
    assert any(ANSWER in h.text for h in hybrid)
    shown = next(h for h in hybrid if ANSWER in h.text)
    assert shown.text.startswith("Note that the handshake")  # widened to the start of its line


@pytest.mark.postgres
def test_a_text_a_shared_memory_chunked_without_windows_gets_them_when_a_server_starts(
    open_memory: Callable[..., TaskMemory], chroma_url: str, postgres_dsn: str, memory_name: str
) -> None:
    import psycopg

    a = open_memory(chroma="http", chroma_url=chroma_url)
    namespace = a.store([TextArtifact(value=GUIDE + "\n")], tool="docs.read").namespace
    assert a.text.wait_indexed(600)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # as a version that made no windows left it
        conn.execute(f'DELETE FROM "{schema_name(memory_name)}".windows')
    hybrid, _ = a.query(GUIDE_QUESTION, namespace, 5, mode="hybrid")
    assert not any(ANSWER in h.text for h in hybrid)
    b = open_memory(chroma="http", chroma_url=chroma_url)  # a server starting (or `offprompt memory reindex`)
    for memory in (b, a):
        shows_the_guide_window(memory, namespace)
