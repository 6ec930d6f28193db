"""Misspelt words read as the knowledge spells them: "is ther parkin?" also searches for "parking".

Customers type fast on phones ("instalmnts", "delivr", "trainr"). A word of the question the business's
knowledge never uses, within a letter or two of one it does (same first letter, difflib ratio >= 0.8), is
read with that word added: the keyword search then matches it and the question's embedding moves towards
it. So is a word written with or without the hyphen the knowledge uses ("wifi" for "Wi-Fi", "mpesa"). The
vocabulary is the words of the active snippets, built in SQL and kept per tenant until the knowledge changes
(the count of versions and their latest update time).
"""
from __future__ import annotations

import difflib
import threading
from collections import OrderedDict

from django.db import connection

from knowledge.retrieval.language import is_english_stopword

MIN_LETTERS = 4  # shorter words ("ur", "wat") are too close to too many others
CLOSE_ENOUGH = 0.8
MAX_LENGTH_GAP = 2
CACHED_TENANTS = 64  # a process serves many businesses: the least recently asked vocabulary goes first

_lock = threading.Lock()
_vocabularies: OrderedDict[str, tuple[tuple, dict[str, list[str]], frozenset[str], dict[str, str]]] = OrderedDict()


def corrections(words: list[str], *, cursor=None) -> list[str]:
    """The knowledge's spelling of each question word it does not use (none for words it knows)."""
    wanted = [word for word in dict.fromkeys(words)
              if len(word.replace("-", "")) >= MIN_LETTERS and word.replace("-", "").isalpha()
              and not is_english_stopword(word)]
    if not wanted:
        return []
    by_letter, known, hyphenated = _vocabulary(cursor)
    found: list[str] = []
    for word in wanted:
        form = _hyphen_form(word, known, hyphenated)
        if form is not None:
            if form not in found:
                found.append(form)
            continue
        if word in known or "-" in word:
            continue
        near = [candidate for candidate in by_letter.get(word[0], ())
                if abs(len(candidate) - len(word)) <= MAX_LENGTH_GAP]
        best = difflib.get_close_matches(word, near, n=1, cutoff=CLOSE_ENOUGH)
        if best and best[0] not in found:
            found.append(best[0])
    return found


def _hyphen_form(word: str, known: frozenset[str], hyphenated: dict[str, str]) -> str | None:
    """The knowledge's way of writing a word it uses with or without a hyphen, when the question's differs
    ("wifi" -> "wi-fi", "mpesa" -> "m-pesa", "pick-up" -> "pickup"), so the searches and the embedding meet it."""
    joined = word.replace("-", "")
    form = joined if joined in known else hyphenated.get(joined)
    return form if form is not None and form != word else None


def _vocabulary(cursor) -> tuple[dict[str, list[str]], frozenset[str], dict[str, str]]:
    """(words by first letter, all words, hyphenated words by their joined form) of the tenant's active
    snippets, rebuilt when the knowledge changes."""
    from knowledge.retrieval.candidates import SNIPPETS

    own = cursor is None
    cursor = cursor or connection.cursor()
    try:
        cursor.execute(f"SELECT count(*), max(updated_at) FROM {SNIPPETS}")
        stamp = tuple(cursor.fetchone())
        schema = getattr(connection, "schema_name", "")
        with _lock:
            cached = _vocabularies.get(schema)
            if cached is not None and cached[0] == stamp:
                _vocabularies.move_to_end(schema)
                return cached[1], cached[2], cached[3]
        # Postgres splits and de-duplicates: only the distinct words travel to Python.
        cursor.execute(
            f"SELECT DISTINCT word FROM (SELECT regexp_split_to_table(lower(title || ' ' || body), '[^[:alpha:]]+')"
            f" AS word FROM {SNIPPETS} WHERE is_active) words WHERE length(word) >= %s", [MIN_LETTERS])
        known = frozenset(row[0] for row in cursor.fetchall())
        cursor.execute(
            f"SELECT DISTINCT m[1] FROM (SELECT regexp_matches(lower(title || ' ' || body),"
            f" '([[:alpha:]]+(?:-[[:alpha:]]+)+)', 'g') AS m FROM {SNIPPETS} WHERE is_active) words")
        hyphenated = {word.replace("-", ""): word for (word,) in cursor.fetchall()
                      if len(word.replace("-", "")) >= MIN_LETTERS}
    finally:
        if own:
            cursor.close()
    by_letter: dict[str, list[str]] = {}
    for word in sorted(known):
        by_letter.setdefault(word[0], []).append(word)
    with _lock:
        _vocabularies[schema] = (stamp, by_letter, known, hyphenated)
        _vocabularies.move_to_end(schema)
        while len(_vocabularies) > CACHED_TENANTS:
            _vocabularies.popitem(last=False)
    return by_letter, known, hyphenated
