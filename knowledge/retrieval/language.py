"""Query language detection (English / Swahili) and glossary expansion of Swahili or mixed queries."""
from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field

from knowledge.retrieval import glossary_sw

_TOKEN_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)*", re.UNICODE)
_detector = None
_detector_lock = threading.Lock()

# English function words, to tell an English token from an untranslated Swahili one in mixed text.
_EN_STOPWORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from about as into over after before up down out off
    is are was were be been am do does did have has had can could will would shall should may might must
    i me my you your he she it we they them our their this that these those there here what which who whom
    whose when where why how not no yes so too very just any some all each more most other such only own
    same than then also again please hi hello hey thanks thank ok okay get got much many long back around
    anything something somewhere anyone someone there's it's i'm don't can't won't
    """.split()
)


def is_english_stopword(word: str) -> bool:
    return word in _EN_STOPWORDS


# Common English endings, longest first; "al" is one only where "arrival" should meet "arrive".
SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "al",
            "s", "e")


def stem(word: str, suffixes: tuple[str, ...] = SUFFIXES) -> str:
    """A light suffix strip ("parking" -> "park", "arrival" -> "arriv", "later" -> "lat"), 3 letters kept."""
    for suffix in suffixes:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens with accents removed (hyphenated words stay whole)."""
    normalized = unicodedata.normalize("NFKD", text or "")
    normalized = "".join(ch for ch in normalized if not unicodedata.combining(ch)).lower()
    return _TOKEN_RE.findall(normalized)


def _get_detector():
    global _detector
    with _detector_lock:
        if _detector is None:
            from lingua import Language, LanguageDetectorBuilder

            # Only the two languages the product serves: far more accurate on short texts than a
            # detector asked to choose among seventy-five.
            _detector = LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.SWAHILI).build()
    return _detector


@dataclass(frozen=True)
class QueryLanguage:
    """The detected language of a query and how much of it is Swahili."""

    language: str  # "en" | "sw"
    swahili_share: float  # 0..1, the detector's confidence that the text is Swahili
    mixed: bool = False


def detect_language(text: str) -> QueryLanguage:
    """English or Swahili, with the Swahili confidence (mixed when the detector is unsure)."""
    words = tokens(text)
    if not words:
        return QueryLanguage(language="en", swahili_share=0.0)
    from lingua import Language

    confidence = _get_detector().compute_language_confidence(text, Language.SWAHILI)
    # Glossary hits back the detector up on very short texts ("Bei?"), where it is least sure.
    known = sum(1 for word in words if word in glossary_sw.WORDS or word in glossary_sw.STOPWORDS)
    if len(words) <= 3 and known == len(words) and not any(word in _EN_STOPWORDS for word in words):
        confidence = max(confidence, 0.9)
    language = "sw" if confidence >= 0.5 else "en"
    return QueryLanguage(language=language, swahili_share=round(confidence, 3), mixed=0.2 <= confidence <= 0.8)


@dataclass
class Expansion:
    """English words for a Swahili/mixed query, and the words kept as they are."""

    english: list[str] = field(default_factory=list)  # glossary translations, in query order
    kept: list[str] = field(default_factory=list)  # loanwords and English words found in the query
    unknown: list[str] = field(default_factory=list)  # Swahili content words the glossary does not know

    @property
    def text(self) -> str:
        """The English rendering used to expand the keyword query and to embed."""
        seen: list[str] = []
        for word in [*self.kept, *self.english]:
            for piece in word.split():
                if piece not in seen:
                    seen.append(piece)
        return " ".join(seen)


def _translate(word: str) -> str | None:
    if word in glossary_sw.WORDS:
        return glossary_sw.WORDS[word] or None
    for root, english in glossary_sw.ROOTS.items():
        if " " not in root and len(root) >= 4 and root in word and len(word) > len(root) - 1:
            return english
    return None


def expand_swahili(text: str) -> Expansion:
    """Translate the Swahili words of `text` with the glossary; keep loanwords and English words."""
    result = Expansion()
    lowered = " ".join(tokens(text))
    for phrase, english in glossary_sw.ROOTS.items():
        if " " in phrase and phrase in lowered:
            result.english.append(english)
    for word in tokens(text):
        if word.isdigit():
            result.kept.append(word)
            continue
        if word in glossary_sw.LOANWORDS:
            result.kept.append(word)
            continue
        if word in glossary_sw.STOPWORDS:
            continue
        english = _translate(word)
        if english:
            result.english.append(english)
        elif word in _EN_STOPWORDS:
            continue
        elif _looks_english(word):
            result.kept.append(word)
        else:
            result.unknown.append(word)
    return result


_EN_SUFFIXES = ("ing", "tion", "ment", "ness", "able", "ed", "ly", "er", "est", "ies", "es")


def _looks_english(word: str) -> bool:
    # Swahili words almost always end in a vowel; an English-looking ending or a final consonant
    # marks a loanword the glossary does not list (walk-in, birthday, facial...).
    if word.endswith(_EN_SUFFIXES):
        return True
    return word[-1] not in "aeiou"
