"""A knowledge text's sentences and content terms, as the extractive answer and the ranking signals read them.

Sentences: line breaks and list items split, then sentence ends (not after "e.g." or "Dr."); authoring metadata (a
`Keywords:` line) is never a sentence. Terms: lower case, lightly stemmed, function words of English and Swahili
dropped, a hyphenated word also read whole ("M-Pesa" ~ "mpesa").
"""
from __future__ import annotations

import re

from knowledge.retrieval.language import stem

_STOPWORDS = frozenset("""
a an the and or but if then so to of in on at by for with from into about as is are was were be been being
do does did doing have has had having i me my we our us you your yours he she it its they them their this that
these those there here what which who whom whose when where why how can could would should will shall may might
must not no yes any some all each every more most other such only own same than too very just also please
hi hello hey thanks thank ok okay get got go going want need like know tell let make one
je ni na ya wa kwa za la cha vya kuna hakuna nini gani wapi lini vipi kama au lakini pia tu sana hii hiyo huu
hapo hapa mimi wewe sisi yangu yako yetu tafadhali naomba nataka ningependa naweza unaweza mnaweza habari asante
""".split())
_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|mr|mrs|ms|dr|no|st|approx|vs|eng|prof|rev|hon|fr|sr|mt)\.$", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")

# Authoring metadata (the SOP's discoverability header, "Keywords: tray size, 500g, ..."): a line that feeds
# retrieval and is never quoted to a customer.
_METADATA_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:keywords?|key\s+words|search\s+terms|synonyms|tags|maneno\s+muhimu)"
                            r"\s*:", re.I)

SHARED_STEM = 7  # letters two words must open with alike to be one word's forms ("pregnant" ~ "pregnancy")


def strip_metadata(text: str) -> str:
    """The body without its authoring metadata lines (`Keywords: ...`)."""
    return "\n".join(line for line in (text or "").splitlines() if not _METADATA_LINE.match(line))


def split_sentences(text: str) -> list[str]:
    """Sentences of a snippet body: line breaks and list items split, then sentence ends; metadata dropped."""
    sentences: list[str] = []
    for line in strip_metadata(text).splitlines():
        line = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", "", line).strip()
        if not line:
            continue
        pieces = _SENTENCE_END.split(line)
        merged: list[str] = []
        for piece in pieces:
            if merged and _ABBREVIATIONS.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        sentences.extend(piece.strip() for piece in merged if piece.strip())
    return sentences


def content_terms(text: str) -> set[str]:
    """A text's content words, lightly stemmed, with hyphenated words also read whole."""
    lowered = (text or "").lower()
    words = re.findall(r"[^\W_]+", lowered)
    # A hyphenated word is also read whole: customers write "mpesa", "wifi", "pickup" ("M-Pesa", "Wi-Fi", ...).
    words += [word.replace("-", "") for word in _HYPHENATED.findall(lowered)]
    return {stem(word) for word in words if word not in _STOPWORDS and (len(word) > 1 or word.isdigit())}


_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+")


def terms_match(question_term: str, term: str) -> bool:
    """Same stem, one a prefix of the other when both have 4+ letters ("cancel" ~ "cancell"), or the same first
    SHARED_STEM letters ("pregnant" ~ "pregnancy", "prescribe" ~ "prescription")."""
    if question_term == term:
        return True
    if len(question_term) < 4 or len(term) < 4:
        return False
    opens_alike = (min(len(question_term), len(term)) >= SHARED_STEM
                   and question_term[:SHARED_STEM] == term[:SHARED_STEM])
    return term.startswith(question_term) or question_term.startswith(term) or opens_alike
