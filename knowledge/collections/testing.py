"""Real document files built in memory for tests and benchmarks (no fixtures on disk)."""
from __future__ import annotations

import io
from dataclasses import dataclass

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, TextStringObject


@dataclass(frozen=True)
class PdfLine:
    text: str
    size: float = 11.0  # font size in points; larger lines read as headings


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _wrap(text: str, width: int) -> list[str]:
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    if current:
        lines.append(current)
    return lines


def make_pdf(pages: list[list[PdfLine | str]], *, title: str | None = None, wrap: int = 90) -> bytes:
    """A text PDF (Helvetica, WinAnsi) with one list of lines per page; long lines are wrapped."""
    writer = PdfWriter()
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
        NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    })
    font_ref = writer._add_object(font)
    for lines in pages:
        page = writer.add_blank_page(width=612, height=792)
        operations, y = [], 750.0
        for line in lines:
            line = PdfLine(line) if isinstance(line, str) else line
            for part in _wrap(line.text, wrap if line.size <= 12 else 60) or [""]:
                operations.append(f"BT /F1 {line.size:g} Tf 72 {y:.1f} Td ({_escape(part)}) Tj ET")
                y -= line.size * 1.4
            y -= line.size * 0.4  # paragraph gap
        stream = DecodedStreamObject()
        stream.set_data("\n".join(operations).encode("cp1252", errors="replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref}),
            NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/Text")]),
        })
    if title:
        writer.add_metadata({"/Title": TextStringObject(title)})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
