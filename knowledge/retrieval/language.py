"""Query language detection (English / Swahili) and glossary expansion of Swahili or mixed queries."""
from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

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


# English words as WhatsApp writes them ("do u wrk", "cn i pay wit"), read as English function words.
_EN_SHORT = frozenset("u ur r wat wht hw cn wit wth frm pls plz wen whr wich im dont cant wanna gonna".split())
# A capitalised word inside a sentence: a name, in either language.
_NAME_RE = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-z]+")


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


def is_swahili_text(text: str) -> bool:
    """Whether a snippet is written in Swahili."""
    return detect_language(text).language == "sw"


@lru_cache(maxsize=4096)
def detect_language(text: str) -> QueryLanguage:
    """English or Swahili, with the Swahili confidence (mixed when the detector is unsure). Cached: a turn
    reads its message's language for itself, its retrieval and its answer, and a snippet's on every answer."""
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
    mixed = 0.2 <= confidence <= 0.8
    # A place name ("Mashujaa", "Juja") or WhatsApp spelling ("paybil numba") sways the detector; the
    # sentence's function words say which language it is built in: they decide when the detector is unsure,
    # or when they all point one way ("Bei ya pedicure ni ngapi?").
    english, swahili = _word_votes(text, words)
    if mixed and english != swahili:
        language = "en" if english > swahili else "sw"
    elif min(english, swahili) == 0 and max(english, swahili) >= 2:
        language = "en" if english else "sw"
    return QueryLanguage(language=language, swahili_share=round(confidence, 3), mixed=mixed)


def _word_votes(text: str, words: list[str]) -> tuple[int, int]:
    """(English function words, Swahili words the glossary knows): the language a sentence is built in. A
    capitalised word inside a sentence is a name ("Who owns Jua Bora Solar?") and votes for neither."""
    names = {match.group(0).lower() for match in _NAME_RE.finditer(text.strip())}
    english = sum(1 for word in words if word in _EN_STOPWORDS or word in _EN_SHORT)
    swahili = sum(1 for word in words if word not in _EN_STOPWORDS and word not in glossary_sw.LOANWORDS
                  and word not in names and (word in glossary_sw.STOPWORDS or word in glossary_sw.WORDS))
    return english, swahili


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


# Swahili numerals with their noun-class forms ("vipande vitatu", "watoto wawili"). "moja" (also "single",
# "one by one") and "pili" ("second") are read only after a multiplier ("elfu moja" = 1,000).
_SW_UNITS = {
    "mbili": 2, "wawili": 2, "viwili": 2, "tatu": 3, "watatu": 3, "vitatu": 3, "nne": 4, "wanne": 4,
    "vinne": 4, "tano": 5, "watano": 5, "vitano": 5, "sita": 6, "saba": 7, "nane": 8, "wanane": 8, "vinane": 8,
    "tisa": 9, "kumi": 10, "ishirini": 20, "thelathini": 30, "arobaini": 40, "hamsini": 50, "sitini": 60,
    "sabini": 70, "themanini": 80, "tisini": 90,
    # the m-mi class ("milango miwili": two doors) and the ji-ma class ("mayai mawili"); "matatu" is the minibus
    "miwili": 2, "mitatu": 3, "minne": 4, "mitano": 5, "minane": 8, "mawili": 2, "manne": 4, "matano": 5,
    "manane": 8,
}
_SW_AFTER_MULTIPLIER = {"moja": 1, "mmoja": 1, "kimoja": 1}
# Multipliers come before what they multiply: "elfu kumi" = 10,000, "mia tano" = 500.
_SW_MULTIPLIERS = {"mia": 100, "elfu": 1000, "laki": 100_000, "milioni": 1_000_000}


def swahili_numerals(text: str) -> str:
    """Swahili number words as digits ("lita elfu kumi" -> "lita 10000", "kumi na tano" -> "15"), so a
    quantity reads like one written in figures. Other words are returned lower-cased as tokens."""
    words = tokens(text)
    out: list[str] = []
    i = 0
    while i < len(words):
        if words[i] not in _SW_UNITS and words[i] not in _SW_MULTIPLIERS:
            out.append(words[i])
            i += 1
            continue
        total, multiplier, value, j = 0, 0, 0, i
        while j < len(words):
            word = words[j]
            if word in _SW_MULTIPLIERS:
                total += multiplier * (value or 1) if multiplier else value
                multiplier, value = _SW_MULTIPLIERS[word], 0
            elif word in _SW_UNITS or (multiplier and word in _SW_AFTER_MULTIPLIER):
                value += _SW_UNITS.get(word) or _SW_AFTER_MULTIPLIER[word]
            elif word == "na" and j + 1 < len(words) and words[j + 1] in _SW_UNITS:
                # "mia tano na hamsini" = 500 + 50, but "elfu kumi na tano" = (10 + 5) thousand.
                joins_multiplicand = multiplier >= 1000 and value % 10 == 0 and _SW_UNITS[words[j + 1]] < 10
                if multiplier and not joins_multiplicand:
                    total += multiplier * (value or 1)
                    multiplier, value = 0, 0
            else:
                break
            j += 1
        total += multiplier * (value or 1) if multiplier else value
        out.append(str(total))
        i = j
    return " ".join(out)


_PLACE_ASKED = re.compile(r"\b(?i:hadi|mpaka)\s+(\w+)|\b(?i:\w*fika)\s+([A-Z]\w+)")


def expand_swahili(text: str, *, question: bool = True) -> Expansion:
    """Translate the Swahili words of `text` (a customer's question, or a snippet when not `question`) with the
    glossary; keep loanwords and English words."""
    result = Expansion()
    # The place a question asks to be served ("Mnafika Gatundu?", "mnaleta hadi likoni?") is a name the glossary
    # cannot know: kept. A place said only as where the customer is ("iko wapi hapa Nakuru?") is not the question,
    # and after "-fika" only a name is a place ("lorry itafika kweli?": will it really get there). A snippet's
    # "hadi" runs to a date as often ("Aprili hadi Juni").
    places = {(to or name).lower() for to, name in _PLACE_ASKED.findall(text or "")} if question else set()
    text = swahili_numerals(text)
    words = tokens(text)
    # A phrase is read as a whole and its words not again ("weka nafasi" is booking, not "keep put store").
    consumed: set[int] = set()
    for phrase, english in glossary_sw.ROOTS.items():
        if " " not in phrase:
            continue
        parts = phrase.split()
        for start in range(len(words) - len(parts) + 1):
            # Its first word may carry Swahili's prefixes ("kuweka nafasi").
            if words[start].endswith(parts[0]) and words[start + 1:start + len(parts)] == parts[1:]:
                if english not in result.english:
                    result.english.append(english)
                consumed.update(range(start, start + len(parts)))
    for index, word in enumerate(words):
        if index in consumed:
            continue
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
        elif loan := _loan_verb(word):
            result.kept.append(loan)
        elif _looks_english(word) or word in places:
            result.kept.append(word)
        else:
            result.unknown.append(word)
    return result


# WhatsApp shorthand and its English (the intent rules and English retrieval both read it).
SHORTHAND = {
    "u": "you", "r": "are", "ur": "your", "y": "why", "hw": "how", "wat": "what", "wht": "what", "wen": "when",
    "whr": "where", "wer": "where", "whre": "where", "wheres": "where is", "pls": "please", "plz": "please",
    "pliz": "please", "shd": "should",
    "cld": "could", "wld": "would", "hav": "have", "cn": "can", "thx": "thanks", "thnx": "thanks",
    "tnx": "thanks", "tx": "thanks", "ty": "thank you", "l8": "late", "l8r": "later", "2day": "today",
    "2moro": "tomorrow", "2mrw": "tomorrow", "tmrw": "tomorrow", "tmr": "tomorrow", "b4": "before",
    "gr8": "great", "im": "i am", "ive": "i have", "dont": "do not", "cant": "can not", "wanna": "want to",
    "gonna": "going to", "appt": "appointment", "appts": "appointments", "bk": "book", "ok": "ok", "k": "ok",
    "kk": "ok", "okay": "ok", "okey": "ok", "sato": "saturday", "asnt": "asante", "asnte": "asante",
    "frm": "from", "wrk": "work", "pik": "pick", "tym": "time", "tyms": "times", "ppl": "people", "pple": "people",
    "abt": "about", "wk": "week", "wks": "weeks", "nd": "and", "wid": "with", "wit": "with", "bt": "but",
    "lctd": "located", "loctd": "located", "incl": "include", "inclu": "include",
    "nw": "now", "rn": "right now", "mch": "much", "muc": "much", "coz": "because", "cuz": "because",
    "bcoz": "because", "tonite": "tonight", "2nite": "tonight", "nite": "night", "gud": "good", "msg": "message",
    "nxt": "next", "dat": "that", "dis": "this", "der": "there",
}
_SHORTHAND_WORD = re.compile(r"[A-Za-z0-9']+")
# "4" and "2" are words before a determiner or a pronoun ("how much 4 a valet", "cn u cum 2 my house") and right
# after "how much" ("hw much 4 zip", "how mch 2 hem jeans") unless a unit follows; elsewhere they are numbers
# ("4 cupcakes", "2 kg").
_NUMBER_WORD = re.compile(r"\b(?P<word>4|2)(?= +(a|an|the|my|your|ur|our|u|you|me|us|him|her|it|this|that|dis|dat)\b)"
                          r"|\b(?P<lead>(how|hw) (much|mch|muc) )(?P<after>4|2)\b(?! *(kg|kgs|g|l|litres?|liters?|m|"
                          r"metres?|meters?|pcs|pieces?|units?|hours?|hrs?|days?|people|persons?|x)\b)", re.I)


def _number_word(match: re.Match) -> str:
    """A "4" or "2" read as the word it stands for, after the "how much" it follows."""
    number = match.group("word") or match.group("after")
    return (match.group("lead") or "") + ("for" if number == "4" else "to")


def expand_shorthand(text: str) -> str:
    """An English message with its WhatsApp shorthand written out ("do u pik up frm Juja" -> "do you pick up
    from Juja"), everything else as the customer wrote it; a Swahili message as written ("u" is Swahili too)."""
    if detect_language(text).language != "en":
        return text
    text = _NUMBER_WORD.sub(_number_word, text)
    return _SHORTHAND_WORD.sub(lambda match: SHORTHAND.get(match.group().lower(), match.group()), text)


@lru_cache(maxsize=4096)
def english_reading(text: str, *, question: bool = True) -> str:
    """The glossary's English rendering of a Swahili text (what a snippet is compared by when an owner wrote
    it in Swahili, `question` False); empty when no word is known."""
    return expand_swahili(text, question=question).text


_EN_SUFFIXES = ("ing", "tion", "ment", "ness", "able", "ed", "ly", "er", "est", "ies", "es")


def _loan_verb(word: str) -> str | None:
    """The English verb in a Sheng infinitive ("kuprint", "kulaminate", "kudeliver"), or None. A Swahili verb's
    infinitive ends in a vowel, nearly always "a"; an English stem ends in a consonant or a silent "e"."""
    if not word.startswith("ku") or len(word) < 6 or "-" in word:
        return None
    stem = word[2:]
    return stem if stem[-1] not in "aiou" else None


def _looks_english(word: str) -> bool:
    # Swahili words almost always end in a vowel; an English-looking ending or a final consonant
    # marks a loanword the glossary does not list (walk-in, birthday, facial...).
    if word.endswith(_EN_SUFFIXES):
        return True
    return word[-1] not in "aeiou"
