from __future__ import annotations

import base64

import mcp_types as mt
import pytest

from offprompt.artifacts import (
    AudioArtifact,
    BlobArtifact,
    ImageArtifact,
    JsonArtifact,
    ListArtifact,
    ResourceLinkArtifact,
    TextArtifact,
    from_result,
    to_result,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()
WAV = base64.b64encode(b"RIFF....WAVEfmt ").decode()


def every_block_result() -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[
            mt.TextContent(text="plain text", annotations=mt.Annotations(audience=["user"], priority=0.5)),
            mt.TextContent(text='{"rows": [1, 2, 3]}', _meta={"source": "db"}),
            mt.ImageContent(data=PNG, mime_type="image/png"),
            mt.AudioContent(data=WAV, mime_type="audio/wav"),
            mt.EmbeddedResource(
                resource=mt.TextResourceContents(uri="file:///notes.md", mime_type="text/markdown", text="# Notes\n")
            ),
            mt.EmbeddedResource(
                resource=mt.BlobResourceContents(uri="file:///x.bin", mime_type="application/zip", blob=PNG)
            ),
            mt.ResourceLink(uri="file:///big.log", name="big.log", mime_type="text/plain", size=123),
        ],
        structured_content={"temperature": 21.5, "unit": "C"},
    )


def test_every_content_block_round_trips_losslessly() -> None:
    result = every_block_result()
    back = to_result(from_result(result))
    assert back.model_dump(by_alias=True) == result.model_dump(by_alias=True)


def test_blocks_become_the_right_artifact_types() -> None:
    artifacts = from_result(every_block_result())
    assert [type(a) for a in artifacts] == [
        TextArtifact,
        JsonArtifact,
        ImageArtifact,
        AudioArtifact,
        TextArtifact,
        BlobArtifact,
        ResourceLinkArtifact,
        JsonArtifact,
    ]
    image = artifacts[2]
    assert isinstance(image, ImageArtifact)
    assert image.value == base64.b64decode(PNG)
    assert artifacts[1].value == {"rows": [1, 2, 3]}


def test_json_text_keeps_its_exact_spelling() -> None:
    text = '[ {"a": 1.0},\n  {"b": "\\u00e9"} ]'
    [artifact] = from_result(mt.CallToolResult(content=[mt.TextContent(text=text)]))
    assert isinstance(artifact, JsonArtifact)
    assert artifact.to_text() == text


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"])
def test_whitespace_only_text_is_empty(text: str) -> None:
    assert not TextArtifact(value=text)
    assert not ListArtifact(value=[TextArtifact(value=text)])


def test_names_are_opaque_and_unique() -> None:
    names = {TextArtifact(value="x").name for _ in range(1000)}
    assert len(names) == 1000
    assert all(len(n) >= 13 and n.isalnum() for n in names)
