"""Split parsed blocks into heading- and sentence-aware chunks with overlap, sized in estimated tokens."""
from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.collections.parsers import Block, ParsedDocument
from knowledge.tokens import token_estimate

# all-MiniLM-L6-v2 reads at most 256 word pieces; a chunk plus its heading line stays under that.
TARGET_TOKENS = 180
MAX_TOKENS = 230
OVERLAP_TOKENS = 30
MIN_TAIL_TOKENS = 40
HEADING_SEPARATOR = " > "

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9À-Ý])")


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    headings: tuple[str, ...]
    page: int | None
    text: str
    token_count: int

    @property
    def heading_path(self) -> str:
        return HEADING_SEPARATOR.join(self.headings)


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    paragraph: int
    page: int | None


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def _split_long(sentence: str, limit: int) -> list[str]:
    """A sentence longer than a chunk (a long table row, a run-on line) is cut at word boundaries."""
    words, pieces, current = sentence.split(), [], []
    for word in words:
        current.append(word)
        if token_estimate(" ".join(current)) >= limit:
            pieces.append(" ".join(current))
            current = []
    if current:
        pieces.append(" ".join(current))
    return pieces


def _sections(blocks: list[Block]) -> list[tuple[tuple[str, ...], list[Block]]]:
    """Group text blocks under the heading path in force where they appear."""
    stack: list[tuple[int, str]] = []
    sections: list[tuple[tuple[str, ...], list[Block]]] = []
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
            continue
        path = tuple(text for _, text in stack)
        if sections and sections[-1][0] == path:
            sections[-1][1].append(block)
        else:
            sections.append((path, [block]))
    return sections


def _join(units: list[_Unit]) -> str:
    text = ""
    for index, unit in enumerate(units):
        if index == 0:
            text = unit.text
        elif unit.paragraph == units[index - 1].paragraph:
            text += " " + unit.text
        else:
            text += "\n" + unit.text
    return text


def chunk_blocks(blocks: list[Block], *, target_tokens: int = TARGET_TOKENS, max_tokens: int = MAX_TOKENS,
                 overlap_tokens: int = OVERLAP_TOKENS) -> list[ChunkDraft]:
    """Pack sentences into chunks of about `target_tokens`, never across a heading, repeating the last
    sentences of a chunk (up to `overlap_tokens`) at the start of the next one in the same section."""
    drafts: list[ChunkDraft] = []
    for headings, section_blocks in _sections(blocks):
        units: list[_Unit] = []
        for paragraph, block in enumerate(section_blocks):
            for sentence in split_sentences(block.text):
                for piece in (_split_long(sentence, target_tokens) if token_estimate(sentence) > max_tokens
                              else [sentence]):
                    units.append(_Unit(piece, token_estimate(piece), paragraph, block.page))
        section_chunks: list[list[_Unit]] = []
        current: list[_Unit] = []
        fresh = 0  # tokens of units not carried over from the previous chunk
        for unit in units:
            size = sum(item.tokens for item in current)
            if current and fresh and size + unit.tokens > target_tokens:
                section_chunks.append(current)
                overlap: list[_Unit] = []
                for item in reversed(current):
                    if sum(o.tokens for o in overlap) + item.tokens > overlap_tokens:
                        break
                    overlap.insert(0, item)
                # Overlap must never push the next chunk past the hard limit.
                while overlap and sum(o.tokens for o in overlap) + unit.tokens > max_tokens:
                    overlap.pop(0)
                current, fresh = overlap, 0
            current.append(unit)
            fresh += unit.tokens
        if current and fresh:
            section_chunks.append(current)
        # A small tail is folded into the chunk before it when the result stays under the hard limit.
        if len(section_chunks) >= 2:
            tail, before = section_chunks[-1], section_chunks[-2]
            tail_new = [unit for unit in tail if not any(unit is kept for kept in before)]
            if (sum(unit.tokens for unit in tail_new) < MIN_TAIL_TOKENS
                    and sum(unit.tokens for unit in before + tail_new) <= max_tokens):
                section_chunks[-2:] = [before + tail_new]
        for chunk_units in section_chunks:
            text = _join(chunk_units)
            drafts.append(ChunkDraft(ordinal=len(drafts), headings=headings, page=chunk_units[0].page,
                                     text=text, token_count=token_estimate(text)))
    return drafts


def chunk_document(parsed: ParsedDocument, **sizes) -> list[ChunkDraft]:
    return chunk_blocks(parsed.blocks, **sizes)


def embedding_text(*, title: str, heading_path: str, text: str) -> str:
    """What is embedded for a chunk: its document title and headings give the bare text its context."""
    context = HEADING_SEPARATOR.join(part for part in (title, heading_path) if part)
    # The title is often also the first heading; say it once.
    if heading_path.startswith(title + HEADING_SEPARATOR) or heading_path == title:
        context = heading_path
    return f"{context}\n{text}" if context else text
