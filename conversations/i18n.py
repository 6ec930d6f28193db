"""Customer-facing phrases in English and Swahili: answer framing, deflections, the language guess.

Only the words *around* cited text are localized here: the extractive provider cannot translate a
snippet, so it frames the snippet's own words with a phrase in the customer's language.
Refusal reasons stay machine-readable (never localized); only the deflection text is.
"""
from __future__ import annotations

SUPPORTED_LANGUAGES = ("en", "sw")
DEFAULT_LANGUAGE = "en"

LANGUAGE_NAMES = {"en": "English", "sw": "Swahili (Kiswahili)"}

_PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "found": "Here is what I found:",
        "found_facts": "Here are the details:",
        "services_intro": "From our services list:",
        "hours_intro": "Our opening hours:",
        "source_language_note": "",
        "next_step": "Would you like me to check availability for you?",
        "nothing_found": "I don't have that information yet. Please call or message us and the team will help you.",
    },
    "sw": {
        "found": "Hiki ndicho nilichopata:",
        "found_facts": "Haya ndiyo maelezo:",
        "services_intro": "Kutoka kwenye orodha ya huduma zetu:",
        "hours_intro": "Saa zetu za kufungua:",
        # Snippets are quoted as written; tell a Swahili reader why a line may be in English.
        "source_language_note": "(Maelezo yamenukuliwa kama yalivyoandikwa.)",
        "next_step": "Ungependa nikuangalie nafasi iliyo wazi?",
        "nothing_found": ("Sina taarifa hiyo kwa sasa. Tafadhali tupigie simu au tutumie ujumbe na timu yetu "
                          "itakusaidia."),
    },
}

# One deflection per refusal reason the product emits (docs/adr/0013), each offering a concrete next step
# and promising nothing that does not happen: a refusal hands nothing to anyone (a booking hand-off does).
REFUSAL_REASONS = ("no_relevant_context", "empty_message", "cost_ceiling")
_DEFLECTIONS: dict[str, dict[str, str]] = {
    "en": {
        "no_relevant_context": ("I'm sorry, I don't have an answer to that yet. Please call or message us and the "
                                "team will help you."),
        "cost_ceiling": ("I've reached the limit of what I can answer in this conversation. Please message or "
                         "call us and the team will help you."),
        "empty_message": "Could you tell me a little more about what you'd like to know?",
        "default": ("I'm sorry, I can't answer that right now. Please message or call us and the team will "
                    "help you."),
    },
    "sw": {
        "no_relevant_context": ("Samahani, sina jibu la swali hilo kwa sasa. Tafadhali tupigie simu au tutumie "
                                "ujumbe na timu yetu itakusaidia."),
        "cost_ceiling": ("Nimefika kikomo cha majibu ninayoweza kutoa katika mazungumzo haya. Tafadhali tutumie "
                         "ujumbe au tupigie simu na timu yetu itakusaidia."),
        "empty_message": "Tafadhali niambie zaidi kuhusu unachotaka kujua.",
        "default": ("Samahani, siwezi kujibu hilo kwa sasa. Tafadhali tutumie ujumbe au tupigie simu na timu "
                    "yetu itakusaidia."),
    },
}

_SMALL_TALK: dict[str, dict[str, str]] = {
    "en": {
        "greeting": "Hello! How can I help you today?",
        "thanks": "You're welcome! Is there anything else I can help with?",
    },
    "sw": {
        "greeting": "Habari! Nikusaidie vipi leo?",
        "thanks": "Karibu sana! Kuna jambo lingine ninaloweza kukusaidia?",
    },
}


def normalize_language(language: str | None) -> str:
    """A supported language code ("en"/"sw"); anything else becomes the default."""
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    return code if code in SUPPORTED_LANGUAGES else DEFAULT_LANGUAGE


def phrase(name: str, *, language: str) -> str:
    """A framing phrase in the customer's language (English when a phrase has no translation)."""
    table = _PHRASES[normalize_language(language)]
    return table.get(name, _PHRASES[DEFAULT_LANGUAGE][name])


def deflection(reason: str, *, language: str) -> str:
    """The human-readable text for a refusal reason, in the customer's language."""
    table = _DEFLECTIONS[normalize_language(language)]
    return table.get(reason, table["default"])


def small_talk(kind: str, *, language: str) -> str:
    """A short reply to a greeting or a thank-you."""
    return _SMALL_TALK[normalize_language(language)][kind]


# ----------------------------------------------------------------------------- language guess

def detect_language(text: str) -> str:
    """The language of a text, "sw" or "en", by retrieval's detector (the two-language model with the
    sentence's function words), so a turn, its answer and its retrieval never read a message as two languages."""
    from knowledge.retrieval.language import detect_language as detect

    return detect(text).language
