"""Parsing and chunking without the database: titles, headings, tables, pages, sizes and overlap."""
from __future__ import annotations

import pytest

from knowledge.collections.chunking import MAX_TOKENS, chunk_blocks, embedding_text, split_sentences
from knowledge.collections.errors import InvalidDocument, UnsupportedFormat
from knowledge.collections.parsers import Block, detect_format, parse_document
from knowledge.collections.testing import PdfLine, make_pdf
from knowledge.tokens import token_estimate


def sentences(count: int, topic: str) -> str:
    return " ".join(f"Sentence {index} explains the {topic} rule number {index} in plain words."
                    for index in range(count))


def test_chunks_respect_headings_size_and_overlap():
    blocks = [Block("heading", "Guide", level=1), Block("heading", "Prices", level=2),
              Block("text", sentences(40, "price")), Block("heading", "Parking", level=2),
              Block("text", sentences(3, "parking"))]
    chunks = chunk_blocks(blocks)
    prices = [chunk for chunk in chunks if chunk.heading_path == "Guide > Prices"]
    parking = [chunk for chunk in chunks if chunk.heading_path == "Guide > Parking"]
    assert len(prices) >= 3 and len(parking) == 1
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    for before, after in zip(prices, prices[1:]):
        # The next chunk starts with the last sentence of the one before (overlap), whole sentences only.
        assert after.text.split(". ")[0] + "." == split_sentences(before.text)[-1]
    assert "price" not in parking[0].text  # no overlap across a heading
    assert parking[0].text == sentences(3, "parking")


def test_a_very_long_sentence_is_cut_at_word_boundaries():
    table_row = " | ".join(f"Item {index} costs {index * 100} shillings" for index in range(120))
    chunks = chunk_blocks([Block("text", table_row)])
    assert len(chunks) > 1
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    assert " ".join(chunk.text for chunk in chunks).split() == table_row.split()


def test_a_small_tail_joins_the_chunk_before():
    text = sentences(14, "rule") + " Short end."
    chunks = chunk_blocks([Block("text", text)])
    assert chunks[-1].text.endswith("Short end.") and token_estimate(chunks[-1].text) > 40


def test_embedding_text_puts_title_and_headings_before_the_text():
    assert embedding_text(title="Price list", heading_path="Massages", text="It costs 4,500.") == \
        "Price list > Massages\nIt costs 4,500."
    assert embedding_text(title="Guide", heading_path="Guide > Parking", text="Free.") == "Guide > Parking\nFree."


def test_plain_text_uses_a_short_first_line_as_title():
    parsed = parse_document(b"Delivery notes\n\nWe deliver daily.\r\n\r\nReturns within 7 days.",
                            filename="notes.txt", format="text")
    assert parsed.title == "Delivery notes"
    assert [(block.kind, block.text) for block in parsed.blocks] == [
        ("heading", "Delivery notes"), ("text", "We deliver daily."), ("text", "Returns within 7 days.")]


def test_markdown_front_matter_tables_and_code():
    data = (b"---\ntitle: 'Menu'\n---\n# Treatments\n\n| Service | Price |\n|---|---|\n| Massage | 4,500 |\n\n"
            b"```\n# not a heading\n```\n")
    parsed = parse_document(data, filename="menu.md", format="markdown")
    assert parsed.title == "Menu"
    assert [(block.kind, block.text) for block in parsed.blocks] == [
        ("heading", "Treatments"), ("text", "Service | Price"), ("text", "Massage | 4,500"),
        ("text", "# not a heading")]


def test_windows_1252_text_is_decoded():
    parsed = parse_document("Caf\u00e9 hours\n\nOpen daily.".encode("cp1252"), filename="cafe.txt", format="text")
    assert parsed.title == "Café hours"


def test_pdf_wrapped_headings_and_hyphenation():
    body = "Guests relax in the garden after each session. " * 4
    data = make_pdf([[PdfLine("A very long heading that the writer wraps onto two lines of the page", 16),
                      "The pre- and post-care of the treat- ment uses warm oil. It lasts an hour.", body]],
                    wrap=38)  # "treat-" ends a line
    parsed = parse_document(data, filename="x.pdf", format="pdf")
    assert [(block.kind, block.text, block.page) for block in parsed.blocks] == [
        ("heading", "A very long heading that the writer wraps onto two lines of the page", 1),
        ("text", "The pre- and post-care of the treatment uses warm oil. It lasts an hour.", 1),
        ("text", body.strip(), 1)]
    assert parsed.title == "A very long heading that the writer wraps onto two lines of the page"


def test_formats_are_detected_from_name_type_or_bytes():
    assert detect_format(filename="a.MD") == "markdown"
    assert detect_format(filename="upload", content_type="application/pdf; charset=binary") == "pdf"
    assert detect_format(filename="upload.bin", head=b"  %PDF-1.7") == "pdf"
    with pytest.raises(UnsupportedFormat):
        detect_format(filename="sheet.xlsx", content_type="application/vnd.ms-excel")


def test_documents_without_text_are_rejected():
    with pytest.raises(InvalidDocument, match="contains no text to index"):
        parse_document(b"<html><body><script>x()</script></body></html>", filename="e.html", format="html")
    with pytest.raises(InvalidDocument, match="is empty"):
        parse_document(b"   \n", filename="e.md", format="markdown")
