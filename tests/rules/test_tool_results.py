"""Bounded tool results (issue 25, point 6): an add-on tool's result is cut at a byte cap
before it reaches a model, with the cut said; a binary one is refused with a reason. Pure
decisions, tested as tables."""

from __future__ import annotations

import pytest

from bees_cli.rules import TOOL_RESULT_BYTES, binary_refusal, cap_tool_result, size_words


def test_the_cap_is_64_kb() -> None:
    assert TOOL_RESULT_BYTES == 64_000


@pytest.mark.parametrize(("text", "expected"), [
    ("", ""),
    ("short", "short"),
    # exactly the cap: whole, no note
    ("a" * 64_000, "a" * 64_000),
    ("é" * 32_000, "é" * 32_000),
    # one byte over: cut at the cap, the total rounded up
    ("a" * 64_001, "a" * 64_000 + "\n[result cut at 64 KB of 65 KB]"),
    # a two-byte character straddling the cap is dropped whole (63,999 bytes kept)
    ("a" * 63_999 + "é", "a" * 63_999 + "\n[result cut at 64 KB of 65 KB]"),
    # a four-byte one ending right at the cap stays
    ("a" * 63_996 + "😀" + "b", "a" * 63_996 + "😀" + "\n[result cut at 64 KB of 65 KB]"),
    ("a" * 200_000, "a" * 64_000 + "\n[result cut at 64 KB of 200 KB]"),
    ("a" * 1_234_567, "a" * 64_000 + "\n[result cut at 64 KB of 1.3 MB]"),
])
def test_a_result_is_cut_at_a_utf8_boundary_with_the_cut_said(text: str,
                                                             expected: str) -> None:
    assert cap_tool_result(text) == expected
    assert len(cap_tool_result(text).split("\n[result cut")[0].encode()) <= TOOL_RESULT_BYTES


@pytest.mark.parametrize(("size", "words"), [
    (0, "0 bytes"), (999, "999 bytes"), (1_000, "1 KB"), (1_001, "2 KB"),
    (64_000, "64 KB"), (999_999, "1000 KB"), (1_000_000, "1.0 MB"), (1_000_001, "1.1 MB"),
    (1_200_000, "1.2 MB"), (25_000_000, "25.0 MB"),
])
def test_sizes_are_said_in_kb_below_1_mb_and_in_mb_with_one_decimal_above(
        size: int, words: str) -> None:
    assert size_words(size) == words


@pytest.mark.parametrize(("what", "refusal"), [
    ("image/png", "refused: the tool ran, but its result is binary (image/png), which this "
                  "model cannot read"),
    ("not UTF-8 text", "refused: the tool ran, but its result is binary (not UTF-8 text), "
                       "which this model cannot read"),
])
def test_a_binary_result_is_refused_with_what_it_is(what: str, refusal: str) -> None:
    assert binary_refusal(what) == refusal


def _blocks() -> dict[str, object]:
    import mcp_types as t

    return {
        "text": t.TextContent(type="text", text="hi"),
        "image": t.ImageContent(type="image", data="iVBO", mime_type="image/png"),
        "audio": t.AudioContent(type="audio", data="UklG", mime_type="audio/wav"),
        "blob": t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///a.pdf", blob="JVBE", mime_type="application/pdf")),
        "bare blob": t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///a", blob="AAAA")),
        "text resource": t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri="file:///a.md", text="# a", mime_type="text/markdown")),
    }


@pytest.mark.parametrize(("names", "media"), [
    ([], None),
    (["text"], None),
    (["text", "text resource"], None),
    (["text", "image"], "image/png"),
    (["audio", "image"], "audio/wav"),
    (["text", "blob"], "application/pdf"),
    (["bare blob"], "application/octet-stream"),
])
def test_an_mcp_answer_with_image_audio_or_blob_content_is_binary(
        names: list[str], media: str | None) -> None:
    from bees_cli.agents.mcp_addon import binary

    blocks = _blocks()
    assert binary([blocks[name] for name in names]) == media
