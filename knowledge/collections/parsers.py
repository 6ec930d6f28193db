"""Turn an uploaded file (Markdown, text, HTML, PDF) into a title and a flat list of heading/text blocks."""
from __future__ import annotations

import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import PurePosixPath

from django.conf import settings

from knowledge.collections.errors import InvalidDocument, UnsupportedFormat
from knowledge.collections.models import DocumentFormat

EXTENSIONS = {
    ".md": DocumentFormat.MARKDOWN, ".markdown": DocumentFormat.MARKDOWN, ".mdown": DocumentFormat.MARKDOWN,
    ".txt": DocumentFormat.TEXT, ".text": DocumentFormat.TEXT,
    ".html": DocumentFormat.HTML, ".htm": DocumentFormat.HTML, ".xhtml": DocumentFormat.HTML,
    ".pdf": DocumentFormat.PDF,
}
CONTENT_TYPES = {
    "text/markdown": DocumentFormat.MARKDOWN, "text/x-markdown": DocumentFormat.MARKDOWN,
    "text/plain": DocumentFormat.TEXT,
    "text/html": DocumentFormat.HTML, "application/xhtml+xml": DocumentFormat.HTML,
    "application/pdf": DocumentFormat.PDF,
}
SUPPORTED = "Markdown (.md), plain text (.txt), HTML (.html) or PDF (.pdf)"


@dataclass(frozen=True)
class Block:
    """A heading (level 1-6) or a paragraph of text, with the page it starts on (PDF only)."""

    kind: str  # "heading" | "text"
    text: str
    level: int = 0
    page: int | None = None


@dataclass
class ParsedDocument:
    title: str
    format: str
    blocks: list[Block] = field(default_factory=list)
    page_count: int | None = None


def max_pages() -> int:
    return getattr(settings, "DOCUMENT_MAX_PAGES", 2000)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def title_from_filename(filename: str) -> str:
    stem = PurePosixPath(filename.replace("\\", "/")).stem
    return _clean(re.sub(r"[_\-]+", " ", stem)) or filename


def detect_format(*, filename: str, content_type: str = "", head: bytes = b"") -> str:
    """The document format from the file name, else its declared type, else its first bytes."""
    suffix = PurePosixPath(filename.lower()).suffix
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared in CONTENT_TYPES:
        return CONTENT_TYPES[declared]
    if head.lstrip().startswith(b"%PDF-"):
        return DocumentFormat.PDF
    raise UnsupportedFormat(f"{filename!r} is not a supported document; upload {SUPPORTED}.")


def decode_text(data: bytes, *, filename: str, declared_charset: str | None = None) -> str:
    """Decode a text file (UTF-8, else the declared charset, else Windows-1252); reject binary data."""
    if b"\x00" in data[:65536]:
        raise InvalidDocument(f"{filename!r} looks like a binary file, not text; upload {SUPPORTED}.")
    for encoding in ("utf-8-sig", declared_charset, "cp1252"):
        if not encoding:
            continue
        try:
            text = data.decode(encoding)
            break
        except (UnicodeDecodeError, LookupError):
            continue
    else:
        text = data.decode("latin-1")
    controls = sum(1 for char in text[:65536] if ord(char) < 32 and char not in "\n\r\t\f")
    if controls > max(8, len(text[:65536]) // 100):
        raise InvalidDocument(f"{filename!r} contains binary data, not readable text.")
    return text


# ----------------------------------------------------------------------------- plain text


def parse_text(data: bytes, *, filename: str) -> ParsedDocument:
    text = decode_text(data, filename=filename).replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [_clean(part) for part in re.split(r"\n\s*\n", text)]
    paragraphs = [part for part in paragraphs if part]
    title = title_from_filename(filename)
    blocks = [Block("text", part) for part in paragraphs]
    # A short first line standing alone (no closing full stop) is the file's own title.
    first = paragraphs[0] if paragraphs else ""
    if len(paragraphs) > 1 and len(first) <= 120 and not first.endswith((".", "?", "!", ":")):
        title = paragraphs[0]
        blocks = [Block("heading", paragraphs[0], level=1)] + blocks[1:]
    return ParsedDocument(title=title, format=DocumentFormat.TEXT, blocks=blocks)


# ----------------------------------------------------------------------------- Markdown

_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n(?:---|\.\.\.)\s*\n", re.DOTALL)


def _inline_text(token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content if child.type != "html_inline" else "")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content or "")
    return _clean("".join(parts))


def parse_markdown(data: bytes, *, filename: str) -> ParsedDocument:
    from markdown_it import MarkdownIt

    text = decode_text(data, filename=filename).replace("\r\n", "\n")
    front_title = None
    match = _FRONT_MATTER.match(text)
    if match:
        title_line = re.search(r"^title:\s*[\"']?(.+?)[\"']?\s*$", match.group(1), re.MULTILINE)
        front_title = _clean(title_line.group(1)) if title_line else None
        text = text[match.end():]
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    blocks: list[Block] = []
    row: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "heading_open":
            heading = _inline_text(tokens[index + 1])
            if heading:
                blocks.append(Block("heading", heading, level=int(token.tag[1])))
            index += 3
            continue
        if token.type == "inline":
            # Paragraphs, list items and blockquotes; table cells are collected into rows below.
            content = _inline_text(token)
            if row is not None and tokens[index - 1].type in ("th_open", "td_open"):
                row.append(content)
            elif content:
                blocks.append(Block("text", content))
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close":
            if any(row):
                blocks.append(Block("text", " | ".join(row)))
            row = []
        elif token.type in ("fence", "code_block", "html_block"):
            content = token.content if token.type != "html_block" else re.sub(r"<[^>]+>", " ", token.content)
            if _clean(content):
                blocks.append(Block("text", content.strip()))
        index += 1
    first_h1 = next((block.text for block in blocks if block.kind == "heading" and block.level == 1), None)
    first_heading = next((block.text for block in blocks if block.kind == "heading"), None)
    title = front_title or first_h1 or first_heading or title_from_filename(filename)
    return ParsedDocument(title=title[:300], format=DocumentFormat.MARKDOWN, blocks=blocks)


# ----------------------------------------------------------------------------- HTML

_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "nav", "head", "iframe", "object"}
_BLOCK_TAGS = {"p", "div", "li", "dd", "dt", "section", "article", "main", "header", "footer", "aside",
               "blockquote", "pre", "figcaption", "caption", "table", "ul", "ol", "dl", "form", "br", "hr",
               "address", "details", "summary", "body"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _HtmlBlocks(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title_parts: list[str] = []
        self.buffer: list[str] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.skip_depth = 0
        self.in_title = False
        self.heading_level = 0

    def _flush(self):
        text = _clean("".join(self.buffer))
        self.buffer = []
        if not text:
            return
        if self.heading_level:
            self.blocks.append(Block("heading", text, level=self.heading_level))
        else:
            self.blocks.append(Block("text", text))

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
            return
        if tag in _SKIP_TAGS:
            self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in _HEADINGS:
            self._flush()
            self.heading_level = int(tag[1])
        elif tag == "tr":
            self._flush()
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
        elif tag in _BLOCK_TAGS:
            self._flush()
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.handle_data(f" {alt} ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "hr", "img"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
            return
        if tag in _SKIP_TAGS:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            return
        if tag in _HEADINGS and self.heading_level:
            self._flush()
            self.heading_level = 0
        elif tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(_clean("".join(self.cell)))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.blocks.append(Block("text", " | ".join(cell for cell in self.row)))
            self.row = None
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data):
        if self.in_title:
            self.title_parts.append(data)
        elif self.skip_depth:
            return
        elif self.cell is not None:
            self.cell.append(data)
        else:
            self.buffer.append(data)

    def close(self):
        super().close()
        self._flush()


def parse_html(data: bytes, *, filename: str) -> ParsedDocument:
    charset = re.search(rb"""<meta[^>]+charset=["']?([\w\-]+)""", data[:4096], re.IGNORECASE)
    text = decode_text(data, filename=filename, declared_charset=charset.group(1).decode() if charset else None)
    parser = _HtmlBlocks()
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # html.parser is lenient; anything it still raises means unreadable input
        raise InvalidDocument(f"{filename!r} could not be read as HTML ({exc}).") from exc
    blocks = parser.blocks
    page_title = _clean("".join(parser.title_parts))
    first_h1 = next((block.text for block in blocks if block.kind == "heading" and block.level == 1), None)
    title = page_title or first_h1 or title_from_filename(filename)
    return ParsedDocument(title=title[:300], format=DocumentFormat.HTML, blocks=blocks)


# ----------------------------------------------------------------------------- PDF


@dataclass
class _Line:
    text: str
    size: float
    bold: bool
    y: float | None
    page: int


def _pdf_open(data: bytes, *, filename: str):
    from pypdf import PdfReader

    if not data.lstrip()[:1024].startswith(b"%PDF-") and b"%PDF-" not in data[:1024]:
        raise InvalidDocument(f"{filename!r} is not a PDF (it has no %PDF header); the file may be corrupt.")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                unlocked = reader.decrypt("")
            except Exception:  # noqa: BLE001 - pypdf raises several types for unsupported encryption
                unlocked = 0
            if not unlocked:
                raise InvalidDocument(f"{filename!r} is password-protected; upload an unprotected copy.")
        page_count = len(reader.pages)
    except InvalidDocument:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for damaged files
        raise InvalidDocument(f"{filename!r} could not be read as a PDF; the file is damaged "
                              f"({exc.__class__.__name__}: {exc}).") from exc
    if page_count == 0:
        raise InvalidDocument(f"{filename!r} has no pages.")
    if page_count > max_pages():
        raise InvalidDocument(f"{filename!r} has {page_count} pages; the limit is {max_pages()}.")
    return reader, page_count


def check_pdf(data: bytes, *, filename: str) -> int:
    """Open a PDF cheaply (header, cross-reference table, encryption, page count) and return its page count."""
    return _pdf_open(data, filename=filename)[1]


def _scale(matrix) -> float:
    return math.hypot(matrix[2], matrix[3]) or 1.0


def _page_lines(page, number: int) -> list[_Line]:
    pieces: list[tuple[str, float, bool, float | None]] = []

    def visit(text, cm, tm, font_dict, font_size):
        if not text:
            return
        base_font = str((font_dict or {}).get("/BaseFont", ""))
        size = round(float(font_size or 0) * _scale(tm) * _scale(cm), 1)
        pieces.append((text, size, "bold" in base_font.lower() or "black" in base_font.lower(), tm[5] * _scale(cm)))

    page.extract_text(visitor_text=visit)
    lines: list[_Line] = []
    current: list[tuple[str, float, bool, float | None]] = []

    def close_line():
        text = _clean("".join(piece[0] for piece in current))
        if text:
            weights: Counter = Counter()
            for piece_text, size, _, _ in current:
                weights[size] += len(piece_text.strip())
            size = weights.most_common(1)[0][0]
            bold = all(piece[2] for piece in current if piece[0].strip())
            y = next((piece[3] for piece in current if piece[0].strip()), None)
            lines.append(_Line(text, size, bold, y, number))
        current.clear()

    for text, size, bold, y in pieces:
        parts = text.split("\n")
        for position, part in enumerate(parts):
            if position:
                close_line()
            if part:
                current.append((part, size, bold, y))
    close_line()
    return lines


def _drop_running_lines(pages: list[list[_Line]]) -> list[list[_Line]]:
    """Remove headers and footers: short lines repeated at the top or bottom of most pages."""
    if len(pages) < 3:
        return pages

    def shape(text: str) -> str:
        return re.sub(r"\d+", "#", text.lower())

    edge_counts: Counter = Counter()
    for lines in pages:
        edges = {shape(line.text) for line in lines[:2] + lines[-2:] if len(line.text) <= 100}
        edge_counts.update(edges)
    running = {text for text, count in edge_counts.items() if count >= max(3, len(pages) // 2)}
    result = []
    for lines in pages:
        keep = []
        for index, line in enumerate(lines):
            at_edge = index < 2 or index >= len(lines) - 2
            if not (at_edge and shape(line.text) in running):
                keep.append(line)
        result.append(keep)
    return result


def parse_pdf(data: bytes, *, filename: str) -> ParsedDocument:
    reader, page_count = _pdf_open(data, filename=filename)
    pages: list[list[_Line]] = []
    try:
        for number, page in enumerate(reader.pages, start=1):
            pages.append(_page_lines(page, number))
    except Exception as exc:  # noqa: BLE001 - a damaged content stream surfaces here
        raise InvalidDocument(f"{filename!r}: page {len(pages) + 1} could not be read; the file is damaged "
                              f"({exc.__class__.__name__}: {exc}).") from exc
    pages = _drop_running_lines(pages)
    all_lines = [line for lines in pages for line in lines]
    if not any(re.search(r"\w", line.text) for line in all_lines):
        raise InvalidDocument(f"{filename!r} has no extractable text (a scanned image needs OCR, "
                              f"which is not supported).")

    # The body size is the one most characters are set in; clearly larger short lines are headings,
    # ranked by size, and short lines wholly in bold sit one level below the smallest heading size.
    weights: Counter = Counter()
    for line in all_lines:
        weights[line.size] += len(line.text)
    body_size = weights.most_common(1)[0][0]
    heading_sizes = sorted({line.size for line in all_lines if line.size >= body_size * 1.12}, reverse=True)
    level_of = {size: min(6, rank + 1) for rank, size in enumerate(heading_sizes)}
    bold_level = min(6, len(heading_sizes) + 1)

    def heading_level(line: _Line) -> int:
        if len(line.text) > 150 or not re.search(r"[^\W\d_]", line.text):
            return 0
        if line.size in level_of:
            return level_of[line.size]
        if line.bold and line.size >= body_size and len(line.text) <= 80 and not line.text.endswith((".", ",", ";")):
            return bold_level
        return 0

    blocks: list[Block] = []
    paragraph: list[str] = []
    paragraph_page: int | None = None
    previous: _Line | None = None

    def flush():
        nonlocal paragraph, paragraph_page
        text = ""
        for line in paragraph:
            # A word hyphenated at the end of a line continues in lower case on the next one.
            if re.search(r"[^\W\d_]-$", text) and line[:1].islower():
                text = text[:-1] + line
            else:
                text = f"{text} {line}" if text else line
        text = _clean(text)
        if text:
            blocks.append(Block("text", text, page=paragraph_page))
        paragraph, paragraph_page = [], None

    for line in all_lines:
        level = heading_level(line)
        if level:
            flush()
            last = blocks[-1] if blocks else None
            # A heading wrapped over two lines arrives as two lines of the same size.
            if (last is not None and last.kind == "heading" and last.level == level and previous is not None
                    and heading_level(previous) == level and previous.page == line.page):
                blocks[-1] = Block("heading", f"{last.text} {line.text}", level=level, page=last.page)
            else:
                blocks.append(Block("heading", line.text, level=level, page=line.page))
        else:
            gap = (previous.y - line.y) if previous is not None and previous.y is not None and line.y is not None else 0
            new_paragraph = (previous is None or previous.page != line.page or heading_level(previous)
                             or gap > line.size * 1.65)
            if new_paragraph and paragraph:
                flush()
            if not paragraph:
                paragraph_page = line.page
            paragraph.append(line.text)
        previous = line
    flush()

    meta_title = ""
    try:
        meta_title = _clean((reader.metadata or {}).get("/Title") or "")
    except Exception:  # noqa: BLE001 - damaged metadata is not worth rejecting the file for
        meta_title = ""
    if re.match(r"^(untitled|microsoft word - |document\d*$)", meta_title.lower()):
        meta_title = ""
    first_heading = next((block.text for block in blocks if block.kind == "heading" and block.level == 1), None)
    title = meta_title or first_heading or title_from_filename(filename)
    return ParsedDocument(title=title[:300], format=DocumentFormat.PDF, blocks=blocks, page_count=page_count)


PARSERS = {
    DocumentFormat.MARKDOWN: parse_markdown,
    DocumentFormat.TEXT: parse_text,
    DocumentFormat.HTML: parse_html,
    DocumentFormat.PDF: parse_pdf,
}


def parse_document(data: bytes, *, filename: str, format: str) -> ParsedDocument:  # noqa: A002 - domain name
    """Parse a document's bytes; raise InvalidDocument with a message for people when it cannot be read."""
    if not data or not data.strip():
        raise InvalidDocument(f"{filename!r} is empty.")
    parsed = PARSERS[format](data, filename=filename)
    if not any(block.kind == "text" for block in parsed.blocks):
        raise InvalidDocument(f"{filename!r} contains no text to index.")
    return parsed
