"""Answer types: what kind of answer a question asks for (a price, a time, a duration, a place, a way to book
or reach the business; English and Swahili forms), and whether a text gives one. A question may ask for none
of them (yes/no, how-to)."""
from __future__ import annotations

import re
from functools import lru_cache

from knowledge.retrieval import glossary_sw
from knowledge.retrieval.language import expand_shorthand, is_english_stopword, tokens

_TYPE_ASKED = {
    "price": re.compile(r"\b(how much|price|prices|pricing|cost|costs|costing|charge|charges|fee|fees|rate|rates|"
                        r"expensive|cheap|afford|bei|gharama|pesa ngapi|ni ngapi|shilingi ngapi|ngapi pesa|"
                        r"kiasi gani)\b"),
    "time": re.compile(r"\b(what time|which time|when do you (open|close)|opening|closing|open on|open at|"
                       r"close on|close at|how late|how early|until when|saa ngapi|mnafungua|mnafunga|"
                       # "what's the latest I can bring it in?", "the earliest time you can come"
                       r"the (latest|earliest) (i|we|you|u|time)|mko wazi|lini)\b"),
    "duration": re.compile(r"\b(how long|duration|how many (minutes|hours|days|weeks)|muda gani|itachukua|"
                           r"inachukua|dakika ngapi|siku ngapi)\b"),
    "place": re.compile(r"\b(where|located|location|address|directions|how do i (get|find)|wapi|mahali|"
                        r"mko wapi)\b"),
    # how to book, order or reach the business: answered by its channels (a number, WhatsApp, email, a site)
    "contact": re.compile(r"\b(how (do|can|could|should|would) (i|we) (book|reserve|schedule|order|contact|reach|"
                          r"call|get hold of|get in touch|make (a|an) (booking|appointment|reservation|order))|"
                          r"how to (book|order|contact|reach)|(phone|contact|whatsapp|mobile|telephone) (number|no)|"
                          r"email address|namba (yenu|ya simu)|nawezaje ku(book|agiza|weka miadi|wasiliana)|"
                          r"nitawapata (vipi|aje)|tuwasiliane)\b"),
}
# A phone number as Kenyan owners write it (+254 722 418 903, 0722 418 903, 051 221 4870) and an e-mail address.
_PHONE = r"\+\d[\d\s-]{7,}\d|\b0\d{2,3}[\s-]?\d{3}[\s-]?\d{3,4}\b"
_EMAIL = r"[\w.+-]+@[\w-]+\.[\w.]+"
_TYPE_GIVEN = {
    "price": re.compile(r"(\b(kes|ksh|kshs|usd|eur|gbp|shillings?|bob|free|bure|no charge|"
                        r"complimentary|price[sd]?|cost[s]?|charged?|fee[s]?|discount|%)\b|[$£€]|\d[\d,]*\s*/=|"
                        r"\d[\d,]*\s*/-)", re.I),
    "time": re.compile(r"(\b\d{1,2}(:\d{2})?\s*(am|pm|a\.m\.|p\.m\.)|\b\d{1,2}[:.]\d{2}\b|\b(monday|tuesday|"
                       r"wednesday|thursday|friday|saturday|sunday|weekday|weekend|daily|morning|afternoon|"
                       r"evening|noon|midnight|24 hours|24/7|jumatatu|jumanne|jumatano|alhamisi|ijumaa|"
                       r"jumamosi|jumapili|asubuhi|jioni|usiku)s?\b)", re.I),
    # ("2 to 3 working days", "10 business days", "a 10-year warranty": a range, a qualifier or a hyphen before the
    # unit)
    "duration": re.compile(r"(\b\d+(\.\d+)?[\s-]*((-|to)\s*\d+\s*)?((working|business|school|calendar|full|clear)\s+)?"
                           r"(min|mins|minutes?|hrs?|hours?|days?|weeks?|months?|years?|yrs?|"
                           r"dakika|saa|siku|wiki)\b|\b(an|one|half an?|two|three|a few) (hour|day|week|minute)s?\b)",
                           re.I),
    "place": re.compile(r"\b(road|rd|street|st|avenue|ave|lane|drive|floor|building|mall|plaza|centre|center|"
                        r"estate|near|opposite|next to|behind|along|off|located|located at|directions?|stage|"
                        r"junction|barabara|karibu na|mkabala|ghorofa)\b", re.I),
    # ("within" alone is no area: "within 3 working days")
    "area": re.compile(r"\b(areas?|zones?|radius|km|kilometres?|kilometers?|county|counties|estates?|towns?|"
                       r"neighbou?rhoods?|suburbs?|outskirts|maeneo|eneo|kaunti|mitaa)\b", re.I),
    # how often something is done or due ("every 6 to 12 months", "once a year", "twice a week", "quarterly")
    "frequency": re.compile(r"\bevery\s+((\d+|other|few|couple of|two|three|four|six|twelve)\s+)?"
                            r"((to|or|-)\s*\d+\s+)?(days?|nights?|weeks?|fortnights?|months?|years?|mornings?|"
                            r"evenings?|seasons?|visits?|km|kilomet\w*)\b"
                            r"|\b(once|twice|thrice|\d+ times)\s+(a|an|per|each|every)\b"
                            r"|\b(daily|weekly|fortnightly|monthly|quarterly|annually|yearly|biannually)\b", re.I),
    "contact": re.compile(rf"({_PHONE}|{_EMAIL}|"
                          r"\bwww\.|https?://|\b(whatsapp|call us|text us|message us|sms us|email us|book online|"
                          r"online booking|our website|our app|tupigie|tutumie)\b)", re.I),
}
# Asking how often something is done or due ("How often should I deworm my dog?"): the answer names a frequency.
# Not an answer type of the ranking or the refusal model; the extractive answer picks its sentence with it.
_FREQUENCY_ASKED = re.compile(r"\bhow (often|frequently|regularly)\b|\bhow many times (a|an|per|each|every)\b")


@lru_cache(maxsize=256)
def asks_how_often(text: str) -> bool:
    """Whether a question asks how often something is done or due."""
    return bool(_FREQUENCY_ASKED.search(" ".join(tokens(text))))


# Types the refusal model was fitted without (relevance.signals_for reads the others only).
RANKING_ONLY = frozenset({"contact", "area"})

# Whether the business serves a place ("do you deliver to Kapsoya?", "I stay in Kitengela, can you come?",
# "mnaleta hadi Langas?", "mnafika Karen?"): the place is the word after the preposition. It is answered by the
# areas the business covers, whether or not they name that place.
_AREA_SLOT = re.compile(
    r"\b(?:deliver\w*|come|coming|work|working|wrk|operate|serve|reach|pick up|pik up|pickup|collect|install|"
    r"travel|send|ship|visit|stay|live|based)\b(?:\s+\w+){0,4}?\s+(?:to|in|at|from|frm|around|near|within)\s+(\w+)"
    r"|\b(?:hadi|mpaka|\w*fika)\s+(\w+)")
# Words after "in" / "at" / "hadi" that name a time or a thing, not a place.
_NOT_PLACES = frozenset("""
night tonight noon midnight weekend weekends morning mornings evening evenings afternoon afternoons time once
all least most first last advance person cash full total general future case hand kesho leo asubuhi jioni usiku
saa lini sasa
""".split())


def area_slot_words(text: str) -> list[str]:
    """The words naming the place an area question asks about ("kapsoya" in "do you deliver to Kapsoya?")."""
    words = []
    for match in _AREA_SLOT.finditer(" ".join(tokens(text))):
        word = match.group(1) or match.group(2)
        # An adverb ("at exactly 9") is no place either.
        if (word and not word.isdigit() and not is_english_stopword(word) and word not in _NOT_PLACES
                and not word.endswith("ly")
                and not _TYPE_GIVEN["time"].search(word)):
            words.append(word)
    return words


@lru_cache(maxsize=256)
def answer_types(text: str) -> frozenset[str]:
    """The answer types a question asks for (price, time, duration, place, contact), possibly none. Cached: a
    retrieval asks it for the ranking and again for the refusal decision."""
    lowered = " ".join(tokens(text))
    asked = {name for name, pattern in _TYPE_ASKED.items() if pattern.search(lowered)}
    return frozenset(asked | ({"area"} if area_slot_words(text) else set()))


def gives_type(text: str, name: str) -> bool:
    """Whether a text holds an answer of that type (an amount, a clock time or day, a length of time, a place,
    a channel)."""
    return bool(_TYPE_GIVEN[name].search(text))


# Where a message asks a second question: "?", or "and"/"na" starting a new clause ("..., and can I ...").
_PART_BREAK = re.compile(
    r"\?+\s*|[.;]\s+|,\s*(?:and|also|plus|but|na|pia|halafu)\s+"
    r"|\s+(?:and|also)\s+(?=(?:do|does|did|can|could|is|are|was|will|would|should|how|what|when|where|which|who|"
    r"why|if|i|you|your|there)\b)"
    # "Mko wapi na mnafungua saa ngapi?": "na" before a verb put to the business ("mna-", "mme-") or a question
    # opener; "mta-" is left out, since it also opens nouns ("mtaalamu").
    r"|\s+na\s+(?=(?:mna\w+|mme\w+|kuna|je|naweza|mnaweza)\b)", re.I)

# How a sentence opens when it asks something (English, Swahili), whatever punctuation ends it.
_ASKS = re.compile(
    r"\s*(?:what|what's|whats|how|when|where|which|who|whom|whose|why|can|could|do|does|did|is|are|was|were|will"
    r"|would|should|shall|may|might|must|have|has|any|je|nini|vipi|wapi|lini|gani|ngapi|kuna|mna|naweza"
    r"|mnaweza|unaweza)\b", re.I)


def question_pieces(question: str, *, join_elliptical: bool = True) -> list[str]:
    """The questions a message asks, as written ("Where are you", "are you open on Sunday?").

    In a message that asks with a question mark, a sentence that ends in a full stop and does not open like
    a question is what the customer tells, not asks ("The matatu is stuck in traffic. Will I lose my
    slot?"): it is context for the question, not a part that needs a source of its own. A question that asks
    only for a kind of answer ("How much?", "Ni pesa ngapi?") asks it of the question before it, and is joined
    to it unless `join_elliptical` is off.
    """
    text = question or ""
    pieces: list[str] = []
    start = 0
    for match in [*_PART_BREAK.finditer(text), None]:
        end = match.start() if match else len(text)
        piece = text[start:end]
        start = match.end() if match else end
        if not piece.strip():
            continue
        told = "?" in text and "?" not in (match.group(0) if match else "") and not _ASKS.match(piece)
        # A part joined to the next by ", and" or by "na" is asked, however it opens ("Mko wapi na ...").
        if not told or (match is not None and ("," in match.group(0) or match.group(0).strip().lower() == "na")):
            if join_elliptical and pieces and _elliptical(piece):
                # "Mnaleta hadi Langas? Ni pesa ngapi?": the price asked is the delivery's, one question.
                pieces[-1] = f"{pieces[-1]}, {piece.strip()}"
            else:
                pieces.append(piece)
    return pieces


def _elliptical(piece: str, kinds: tuple[str, ...] = tuple(_TYPE_ASKED)) -> bool:
    """A question that asks for a kind of answer and names nothing ("and how long?", "Ni pesa ngapi?")."""
    lowered = " ".join(tokens(expand_shorthand(piece)))
    asked = False
    for name in kinds:
        lowered, found = _TYPE_ASKED[name].subn(" ", lowered)
        asked = asked or found > 0
    return asked and all(is_english_stopword(word) or word in glossary_sw.STOPWORDS for word in lowered.split())


def asks_only_a_figure(message: str) -> bool:
    """A message asking only a price, a time or a duration, of nothing named ("how much?", "bei gani?", "saa
    ngapi?"): it asks about what was being discussed. "Where are you?" names nothing either, yet asks about the
    business, so a place is left out."""
    return _elliptical(message, ("price", "time", "duration"))


# ----------------------------------------------------------------------------- how to reach or pay the business

# Words that ask for a way to reach or pay the business and name nothing else ("What is your phone number?",
# "whats ur till numba", "Namba yenu ya simu?"). A question with any other content word ("What is your
# emergency number?", "Can you email me the receipt?") asks about something, and is left to the refusal model.
_EMAIL_WORDS = frozenset("email emails mail e-mail barua pepe".split())
_PAYMENT_WORDS = frozenset("till paybill paybil pay-bill account acc mpesa m-pesa lipa buy goods".split())
_PHONE_WORDS = frozenset("phone phones number numbers numba namba no call calling contact contacts reach whatsapp "
                         "mobile telephone tel cell line sms text simu".split())
_REQUEST_WORDS = frozenset("what whats what's is your ur have do does you can could i we how get send give share "
                           "pls please kindly gani yenu ni wapi which best the a".split())
_DETAIL_GIVEN = {
    "phone": _PHONE,
    "email": _EMAIL,
    "payment": r"\b(till|paybill|pay bill|account|business (number|no)|buy goods)\b[^.\n]{0,40}?\d{4,}",
}
_DETAIL_PATTERNS = {name: re.compile(pattern, re.I) for name, pattern in _DETAIL_GIVEN.items()}


# Ways to pay a customer names when asking whether the business takes them ("Do you take M-Pesa?", "Can I pay by
# card?", "Mnakubali Visa?"): the words a question uses for each, and how an owner writes that it is taken (a card
# is a payment card, not an ID or vaccination card).
_METHODS = {
    "mpesa": (frozenset("mpesa m-pesa".split()), r"\bm-?pesa\b"),
    "card": (frozenset("card cards visa mastercard debit".split()),
             r"\b(visa|mastercard|debit cards?|credit cards?|bank cards?|card payments?|card machines?|kadi za benki|"
             r"(by|with|pay\w*|accept\w*|take|use) (a |your )?cards?)\b"),
    "cash": (frozenset("cash taslimu".split()), r"\b(cash|taslimu)\b"),
    "cheque": (frozenset("cheque cheques".split()), r"\bcheques?\b"),  # "check" is mostly checking (out)
    "bank": (frozenset("bank transfer eft rtgs".split()), r"\b(bank|transfer|eft|rtgs|benki)\b"),
    "airtel": (frozenset("airtel".split()), r"\bairtel\b"),
    "insurance": (frozenset("insurance bima insurer insurers".split()), r"\b(insurance|nhif|sha|bima|insurers?)\b"),
    # a named scheme is taken only where the owner names it: "we take insurance" does not say SHA
    "nhif": (frozenset(["nhif"]), r"\bnhif\b"),
    "sha": (frozenset(["sha"]), r"\bsha\b"),
}
_METHOD_OF = {word: method for method, (words, _written) in _METHODS.items() for word in words}
_METHOD_WRITTEN = {method: re.compile(written, re.I) for method, (_words, written) in _METHODS.items()}
# Words that ask whether a way to pay is taken, and nothing else.
_ACCEPT_WORDS = frozenset("""
take takes accept accepts accepted pay paying payment payments paid use using via through money
kubali mnakubali mnapokea pokea kulipa nalipa lipa malipo naweza nitalipa
""".split())


@lru_cache(maxsize=256)
def payment_methods_asked(text: str) -> frozenset[str]:
    """The ways to pay a question asks whether the business takes, when it asks nothing else ("Do you take
    M-Pesa?" -> {"mpesa"}); empty for any other question ("Are you an M-Pesa agent?", "Can I withdraw cash?")."""
    words = [word for word in tokens(expand_shorthand(text)) if len(word) > 1 and not is_english_stopword(word)
             and word not in glossary_sw.STOPWORDS and word not in _REQUEST_WORDS]
    if not words or any(word not in _METHOD_OF and word not in _ACCEPT_WORDS for word in words):
        return frozenset()
    return frozenset(_METHOD_OF[word] for word in words if word in _METHOD_OF)


def names_method(text: str, methods: frozenset[str]) -> bool:
    """Whether a text names one of these ways to pay (as the owner writes it: "Visa or Mastercard", "M-Pesa")."""
    return any(_METHOD_WRITTEN[method].search(text or "") for method in methods)


@lru_cache(maxsize=256)
def reach_asked(text: str) -> str | None:
    """The detail a question asks for when it asks only how to reach or pay the business: "email", "payment"
    (a till, paybill or account number) or "phone" (a number to call or WhatsApp; an e-mail does too for
    "contact"); None when it asks about anything else."""
    words = [word for word in tokens(expand_shorthand(text)) if len(word) > 1 and not is_english_stopword(word)
             and word not in glossary_sw.STOPWORDS and word not in _REQUEST_WORDS]
    if _EMAIL_WORDS.intersection(words):
        words = [word for word in words if word not in ("address", "id")]  # "your email address"
    if not words or any(word not in _EMAIL_WORDS | _PAYMENT_WORDS | _PHONE_WORDS for word in words):
        return None
    if any(word in _EMAIL_WORDS for word in words):
        return "email"
    if any(word in _PAYMENT_WORDS for word in words):
        return "payment"
    return "phone"


def gives_detail(text: str, kind: str) -> bool:
    """Whether a text holds the detail `reach_asked` named (a phone number also answers "contact" as an e-mail
    address does)."""
    if _DETAIL_PATTERNS[kind].search(text or ""):
        return True
    return kind == "phone" and bool(_DETAIL_PATTERNS["email"].search(text or ""))


@lru_cache(maxsize=256)
def _read(text: str) -> str:
    """A question as the readers below match it: shorthand written out, lower-cased words one space apart."""
    return " ".join(tokens(expand_shorthand(text)))


# Who runs the business and how long it has been going ("Who owns Jua Bora Solar?", "Who's behind the company?",
# "How long have you been in business?", "Mmiliki ni nani?"): answered by the snippet the owner titled "About ...".
# The verb's object, when there is one, must be the business ("Who runs the Zumba class?" asks about a class).
_ABOUT_VERB = re.compile(
    r"\bwho(?: s| is| are)?(?: \w+){0,2} (?:own|owns|owned|run|runs|ran|started|starts|founded|set up|sets up|"
    r"manage|manages|managed|behind)\b(?P<object>(?: \w+){0,3})"
    r"|\bwhen (?:was|were|did) (?P<subject>(?:\w+ ){1,3})(?:founded|established|started|start|set up|opened)\b"
    r"(?P<after>(?: \w+){0,3})")
_ABOUT_ASKED = re.compile(
    r"\bwho(?: s| is| are) (?:the |your )?(?:owner|owners|founder|founders)\b"
    r"|\bhow long (?:have|has) (?:\w+ ){1,3}been (?:around|in business|in this|in the|operating|running|doing|"
    r"open|trading|working)\b"
    r"|\btell (?:me|us) (?:more )?about (?:you|yourselves|your (?:business|company|shop|team|history))\b"
    r"|\b(?:mmiliki|wamiliki|mwanzilishi|waanzilishi|anamiliki|wanamiliki|aliyeanzisha|alianzisha|"
    r"walianzisha|ilianzishwa|mlianza|mlianzisha|mmekuwepo)\b")
# Who serves the customer, as a whole ("Who are the vets at your clinic?"), not one job's ("Who are the instructors
# for the night classes?"): the snippet about the business names its people.
_STAFF_ASKED = re.compile(
    r"\bwho (?:are|re) (?:the|your) (?:vets|doctors|dentists|staff|team|instructors|teachers|trainers|coaches|"
    r"stylists|barbers|braiders|tailors|technicians|therapists|pharmacists|photographers|mechanics|cleaners|people)"
    r"(?: (?:here|there|at (?:the|your) \w+))?$")
# Words for the business's own premises: "Where is your shop?" asks where the business is.
PREMISES_WORDS = ("shop store office premises place business building outlet showroom workshop studio garage salon "
                  "clinic surgery practice spa gym school academy bakery restaurant cafe hotel pharmacy centre center "
                  "branch yard depot warehouse college institute campus chemist lodge guesthouse hostel kiosk duka "
                  "ofisi").split()
_THE_BUSINESS = frozenset("""
the this that your it you place business company shop firm store outfit here guys people team
""".split()) | frozenset(PREMISES_WORDS)
_NEXT_CLAUSE = frozenset("and or but na also so".split())
# How an owner titles that snippet ("About Madoa", "About our clinic and team", "Our story", "Kuhusu sisi").
ABOUT_TITLE = re.compile(r"^\s*(about|kuhusu)\b|\b(our story|who we are|historia yetu)\b", re.I)


# How an owner says who started the business and when ("opened in 2009 by Mary Wambui", "family-owned since 1998").
_HISTORY_GIVEN = re.compile(r"\b(since|in|from) (19|20)\d\d\b|\b(founded|established|started|opened|set up|began|"
                            r"owned|owner|run by|ilianzishwa|ilifunguliwa|mmiliki)\b", re.I)


def gives_history(text: str) -> bool:
    """Whether a sentence says who started or owns the business, or since when."""
    return bool(_HISTORY_GIVEN.search(text or ""))


@lru_cache(maxsize=256)
def asks_about_the_business(text: str) -> bool:
    """Whether a question asks who owns, runs, started or works at the business, or how long it has been going."""
    lowered = _read(text)
    if _ABOUT_ASKED.search(lowered) or _STAFF_ASKED.search(lowered):
        return True
    # A capitalised word is the business's name ("Who owns Madoa Laundry?").
    names = {word.lower() for word in re.findall(r"\b[A-Z][\w-]*", text or "")}
    for match in _ABOUT_VERB.finditer(lowered):
        said = " ".join(match.group(name) or "" for name in ("object", "subject", "after")).split()
        said = said[:next((i for i, word in enumerate(said) if word in _NEXT_CLAUSE), len(said))]
        if all(word in _THE_BUSINESS or word in names for word in said):
            return True
    return False


def asks_about_the_staff(text: str) -> bool:
    """Whether a question asks who works at the business ("Who are your stylists?"), not its history."""
    return bool(_STAFF_ASKED.search(_read(text)))


# How to book, or whether one must ("How do I book interior detailing?", "Do I need an appointment for alterations?",
# "Do you accept walk-ins?", "Nawezaje kubook?"): answered by the snippet the owner titled for booking, not by the
# one describing the service named.
# Coming without booking is asking about walk-ins ("Can I just come in without an appointment?", "bila booking").
_WITHOUT_BOOKING = r"\bwithout (?:a |an )?(?:booking|appointment)\b|\bbila (?:booking|miadi|kubook)\b"
_HOW_TO_BOOK = re.compile(
    r"\bhow (?:do|can|could|should|would) (?:i|we) (?:book|reserve|schedule|enrol|enroll|make (?:a|an) "
    r"(?:booking|appointment|reservation))\b|\bhow to (?:book|reserve|enrol|enroll)\b"
    r"|\b(?:do|must|will) (?:i|we) (?:need|have) to (?:book|reserve|make (?:a|an) (?:booking|appointment))\b"
    r"|\bneed (?:a|an) (?:appointment|booking)\b|\b(?:i|we) must book\b|\bwalk ?-?ins?\b|\bwalk in\b"
    r"|\bnawezaje ku(?:book|weka (?:miadi|nafasi))\b|\bkubook\b.*\bnifanyeje\b|\bnifanyeje\b.*\bkubook\b"
    r"|" + _WITHOUT_BOOKING)
BOOKING_TITLE = re.compile(r"\b(book|booking|bookings|appointments?|reserv\w*|walk-?ins?|enrol\w*|miadi|nafasi)\b",
                           re.I)
WALK_IN_TITLE = re.compile(r"\bwalk[- ]?ins?\b", re.I)
WALK_IN_ASKED = re.compile(r"\bwalk[- ]?ins?\b|" + _WITHOUT_BOOKING, re.I)
HOW_TO_TITLE = re.compile(r"\bhow (to|do|can)\b|\bneed to book\b|\bnawezaje\b", re.I)
# A title on changing a booking ("Cancelling or moving an appointment", "Running late", "Booking deposits").
CHANGE_TITLE = re.compile(r"\b(cancel\w*|mov(e|ing)|reschedul\w*|late|deposits?|kughairi|kuahirisha)\b", re.I)


@lru_cache(maxsize=256)
def asks_how_to_book(text: str) -> bool:
    """Whether a question asks how to book, or whether booking is needed (not a request to book a time)."""
    return bool(_HOW_TO_BOOK.search(_read(text)))


# Policies a question names ("Can I return floor mats if they don't fit?", "How do I make a complaint?", "If I cancel,
# do I lose my deposit?", "Do I pay a deposit for a suit?"), and how an owner titles the snippet setting each: the
# product or service the question names is closer by meaning, but says nothing of the policy.
_POLICY_ASKED = {
    "returns": re.compile(r"\b(?:can|could|may|do) (?:i|we|you) (?:return|exchange|swap|refund)\b|\brefunds?\b"
                          r"|\bmoney back\b|\breturns? policy\b|\b(?:ku|ni|mta)\w*rudish\w*\b"),
    "complaints": re.compile(r"\b(?:complain|complaints?|complaining|malalamiko|kulalamika)\b"),
    "cancel": re.compile(r"\b(?:cancel|cancels|cancelled|canceled|cancelling|canceling|cancellation)\b|\b\w*ghairi\b"),
    "deposit": re.compile(r"\b(?:deposit|deposits|down ?payment|amana)\b"),
}
# A deposit the customer pays on a rent ("How do I get my rent deposit back?") is not the business's deposit.
_NOT_OURS = re.compile(r"\b(?:rent|landlord|landlords|kodi)\b")
POLICY_TITLE = {
    "returns": re.compile(r"\b(returns?|exchanges?|refunds?|kurudisha)\b", re.I),
    "complaints": re.compile(r"\b(complaints?|malalamiko)\b", re.I),
    "cancel": re.compile(r"\b(cancel\w*|kughairi)\b", re.I),
    "deposit": re.compile(r"\b(?<!rent )(deposits?|amana)\b", re.I),
}


# An urgent call-out ("Water is pouring through my ceiling right now. Can someone come tonight?", "Is a hot socket an
# emergency?", "Ni dharura?"): the emergency itself named, or haste together with someone coming or being called.
_EMERGENCY = re.compile(r"\bemerg\w*|\b(?:urgent|urgently|dharura)\b")  # "emergancy" too
_RIGHT_AWAY = re.compile(r"\b(?:right now|right away|tonight|immediately|asap|as soon as possible"
                         r"|how (?:fast|soon|quickly)|usiku huu|sasa hivi|haraka)\b")
_CALL_OUT = re.compile(r"\b(?:come|coming|send|someone|somebody|anyone|technician|call|reach|fundi|kuja|atakuja|aje|"
                       r"afike|kufika|nipigie|tuma)\b")
EMERGENCY_TITLE = re.compile(r"\b(emergenc\w*|urgent|dharura)\b", re.I)
# What a customer changing or cancelling a booking needs first: the snippet titled for changes and cancelling
# ("Cancelling or rescheduling", "Fitting appointments: changes", "Moving a booking"), not one titled only for
# deposits or lateness, nor "Move-out cleaning" or "When to change wiper blades".
REQUEST_CHANGE_TITLE = re.compile(
    r"\b(cancel\w*|reschedul\w*|postpon\w*|changes|kughairi|kuahirisha)\b"
    r"|\b(chang\w*|mov(e|ing))\W+(\w+\W+){0,2}(bookings?|appointments?|fittings?|lessons?|sessions?|visits?|slots?|"
    r"dates?|orders?|pickups?)\b", re.I)


@lru_cache(maxsize=256)
def asks_urgently(text: str) -> bool:
    """Whether a question is about an emergency or asks for someone to come or answer right away."""
    read = _read(text)
    return bool(_EMERGENCY.search(read) or (_RIGHT_AWAY.search(read) and _CALL_OUT.search(read)))


@lru_cache(maxsize=256)
def policies_asked(text: str) -> frozenset[str]:
    """The policies a question asks about: returns, complaints, cancelling, deposits (what cancelling does to one is the
    cancellation terms)."""
    read = _read(text)
    asked = {name for name, pattern in _POLICY_ASKED.items() if pattern.search(read)}
    if "cancel" in asked or _NOT_OURS.search(read):
        asked.discard("deposit")
    return frozenset(asked)
