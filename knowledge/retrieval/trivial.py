"""Trivial turns ("ok", "thanks", "asante", "sawa"): the SOP's rules plus Swahili equivalents.

A message is trivial when it has at most four words, contains no domain term and no question word,
and consists only of acknowledgement / courtesy phrases (anchored at both ends, as in the SOP).
Such turns skip embedding and retrieval and reuse the session's last retrieval.
"""
from __future__ import annotations

from knowledge.retrieval.language import tokens

MAX_WORDS = 4

# The SOP's list, adapted to a service business, plus Swahili and Sheng acknowledgements and greetings.
_TRIVIAL_PHRASES = {
    # English (SOP)
    "ok", "okay", "k", "kk", "thanks", "thank you", "thankyou", "thx", "ty", "got it", "great", "perfect",
    "cool", "cheers", "ta", "lovely", "brilliant", "nice", "sure", "right", "yes", "no", "yep", "nope",
    "alright", "all right", "understood", "noted", "will do", "good to know", "that makes sense", "i see",
    "appreciate it", "fine", "awesome", "super", "wonderful", "excellent", "amazing", "good",
    "hi", "hello", "hey", "good morning", "good afternoon", "good evening", "bye", "goodbye",
    # Swahili / Sheng
    "asante", "asanteni", "shukran", "shukrani", "nashukuru", "sawa", "sawasawa", "poa", "safi", "freshi",
    "fiti", "haya", "ndio", "ndiyo", "hapana", "nimeelewa", "nimesikia", "nimeona", "vizuri", "sawa basi",
    "barikiwa", "ubarikiwe", "karibu", "jambo", "hujambo", "sijambo", "mambo", "vipi", "niaje", "sasa",
    "habari", "salama", "shwari", "kwaheri", "usiku mwema", "siku njema",
}
# Words that may accompany an acknowledgement without making it substantive.
_FILLERS = {"so", "much", "very", "a", "lot", "again", "sana", "tena", "za", "ya", "asubuhi", "mchana",
            "jioni", "yako", "yenu", "kabisa", "mno", "you", "all", "guys", "then", "now", "oh", "ah",
            "wow", "hmm", "please", "basi", "bana", "msee", "mresh", "for", "that", "the", "help", "info"}
# Question words (SOP) and their Swahili equivalents: a message containing one is never trivial.
_QUESTION_WORDS = {"how", "what", "when", "where", "why", "which", "who", "whom", "whose",
                   "nini", "gani", "lini", "wapi", "kwanini", "nani", "ngapi", "je", "kiasi"}
# Domain terms of a service business: any of them makes a short message a real question.
DOMAIN_TERMS = {
    "book", "booking", "appointment", "slot", "cancel", "reschedule", "move", "price", "cost", "pay",
    "payment", "deposit", "refund", "voucher", "discount", "open", "close", "closed", "hours", "today",
    "tomorrow", "parking", "location", "address", "massage", "facial", "nails", "manicure", "pedicure",
    "service", "services", "treatment", "menu", "delivery", "order", "table", "room", "available",
    "miadi", "bei", "pesa", "lipa", "malipo", "amana", "punguzo", "fungua", "funga", "leo", "kesho",
    "huduma", "masaji", "gari", "mahali",
}


def _covered(words: list[str]) -> bool:
    """True when `words` split entirely into trivial phrases and fillers."""
    position = 0
    while position < len(words):
        for size in (3, 2, 1):
            chunk = " ".join(words[position:position + size])
            if len(words[position:position + size]) == size and (chunk in _TRIVIAL_PHRASES or
                                                                  (size == 1 and chunk in _FILLERS)):
                position += size
                break
        else:
            return False
    return True


def is_trivial(message: str) -> bool:
    """True for short acknowledgements and greetings that need no retrieval (SOP rules + Swahili)."""
    words = tokens(message)
    if not words or len(words) > MAX_WORDS:
        return False
    if any(word in DOMAIN_TERMS for word in words):
        return False
    if any(word in _QUESTION_WORDS for word in words):
        return False
    if not _covered(words):
        return False
    return any(word not in _FILLERS for word in words)
