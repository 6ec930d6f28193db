"""Email drafts: a customer email becomes a reply for staff to check and send (the SOP's email channel).

The question is the new part of the email (quoted replies, signatures, greeting and sign-off removed); it is
answered as a chat turn on channel `email` (the email token budget, email guardrails and behaviour sections).
The draft follows the SOP's email_format rules: a greeting with the customer's name, plain text, at most one
exclamation mark and none in the subject, no sign-off (staff add their own).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from channels.plaintext import plain_text
from conversations import services as turns
from conversations.handoffs import handoff_contact_add
from conversations.models import HandoffRequest

MAX_BODY_CHARS = 20_000
MAX_SUBJECT_CHARS = 300

_CUT_AT = re.compile(
    r"^(?:On .{1,200}wrote:\s*$|-{2,}\s*Original Message\s*-{2,}|-- ?$|_{5,}\s*$|From:\s.+$"
    r"|Sent from my \w+|Get Outlook for)", re.I | re.M)
_GREETING = re.compile(r"^(?:hi|hello|hey|dear|good (?:morning|afternoon|evening)|greetings|habari(?: yako| za \w+)?"
                       r"|hujambo|jambo|salamu|shikamoo)\b[^.?!\n]{0,40}[,!.:]?\s*$", re.I)
_SIGN_OFF = re.compile(r"^(?:thanks?(?: you)?(?: so much| very much| in advance)?|many thanks|regards|kind regards|"
                       r"best(?: regards| wishes)?|warm regards|cheers|sincerely|yours(?: sincerely| faithfully)?|"
                       r"asante(?: sana)?|shukrani|wako|wasalaam|kila la heri)[,.!]*(?:\s+(?P<name>.+))?$", re.I)
_NAME = re.compile(r"^[-–—~]?\s*(?P<name>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’.-]+){0,2})\s*$")

_GREETINGS = {"en": ("Hi {name},", "Hello,"), "sw": ("Habari {name},", "Habari,")}
_CLOSINGS = {"en": "If there is anything else I can help with, just reply to this email.",
             "sw": "Kama kuna jambo lingine ninaloweza kukusaidia, jibu barua pepe hii tu."}


class DraftError(turns.TurnError):
    """Input the drafts endpoint rejects (a 400 with the fields at fault)."""


@dataclass(frozen=True)
class EmailParts:
    question: str
    signed_name: str


@dataclass(frozen=True)
class EmailDraft:
    suggested_subject: str
    customer_name: str
    draft: str
    citations: list[dict]
    refusal_reason: str | None
    meta: dict

    def to_response(self) -> dict:
        return {"suggested_subject": self.suggested_subject, "customer_name": self.customer_name,
                "draft": self.draft, "citations": self.citations, "refusal_reason": self.refusal_reason,
                "meta": self.meta}


def email_parts(body: str) -> EmailParts:
    """The new text of an email (no quoted reply, signature, greeting or sign-off) and the name it is signed with."""
    text = (body or "").replace("\r\n", "\n")
    cut = _CUT_AT.search(text)
    if cut:
        text = text[: cut.start()]
    lines = [line.strip() for line in text.split("\n") if not line.lstrip().startswith(">")]
    while lines and not lines[0]:
        lines.pop(0)
    if lines and _GREETING.match(lines[0]):
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    name = ""
    # A sign-off near the end, with the name on its line or the next: "Thanks,\nWanjiku" / "Regards, Ann Kamau".
    for index in range(max(0, len(lines) - 3), len(lines)):
        match = _SIGN_OFF.match(lines[index])
        if match:
            after = [line for line in lines[index + 1:] if line]
            candidate = match.group("name") or (after[0] if after else "")
            named = _NAME.match(candidate.strip()) if candidate else None
            name = named.group("name") if named else ""
            lines = lines[:index]
            break
    else:
        if len(lines) >= 2 and lines[-1].startswith(("-", "–", "—", "~")) and _NAME.match(lines[-1]):
            name = _NAME.match(lines[-1]).group("name")
            lines = lines[:-1]
    question = re.sub(r"\s+", " ", " ".join(lines)).strip()
    return EmailParts(question=question, signed_name=name)


def suggested_subject(subject: str) -> str:
    """'Re: <subject>', once, without exclamation marks (never in subject lines)."""
    cleaned = re.sub(r"^(?:\s*(?:re|fwd?|aw|sv)\s*:\s*)+", "", subject or "", flags=re.I).replace("!", "").strip()
    return f"Re: {cleaned}" if cleaned else "Re: your message"


def _one_exclamation(text: str) -> str:
    first = text.find("!")
    return text if first < 0 else text[: first + 1] + text[first + 1:].replace("!", ".")


def check_email_input(*, from_email: str, subject: str, body: str) -> None:
    """Reject what the endpoint must reject (the serializer checks types and the e-mail address)."""
    errors: dict[str, list[str]] = {}
    if not (body or "").strip():
        errors["body"] = ["This field may not be blank."]
    elif len(body) > MAX_BODY_CHARS:
        errors["body"] = [f"Ensure this field has no more than {MAX_BODY_CHARS} characters."]
    if len(subject or "") > MAX_SUBJECT_CHARS:
        errors["subject"] = [f"Ensure this field has no more than {MAX_SUBJECT_CHARS} characters."]
    if errors:
        raise DraftError("Some fields are invalid.", fields=errors)


def email_draft_create(*, from_email: str, subject: str, body: str, from_name: str = "",
                       api_key_prefix: str = "") -> EmailDraft:
    """Answer a customer email as a draft reply for staff (a turn on channel email; a refusal when nothing fits)."""
    check_email_input(from_email=from_email, subject=subject, body=body)
    parts = email_parts(body)
    if not parts.question:
        raise DraftError("The email has no question to answer.", fields={"body": ["No text besides quotes, a "
                                                                                 "greeting or a signature."]})
    question = parts.question
    if len(question.split()) < 4 and subject.strip():
        # "Re: Parking" + "Do you have it?": the subject carries the topic of a short question.
        question = f"{subject.strip()}. {question}"
    name = parts.signed_name or (from_name or "").strip()
    # One transaction: the hand-off alert goes out on commit, and by then it names the sender to reply to.
    with transaction.atomic():
        result = turns.turn_run(turns.TurnInput(message=question[: turns.MAX_MESSAGE_CHARS], channel="email",
                                                api_key_prefix=api_key_prefix))
        for handoff in HandoffRequest.objects.filter(turn__public_id=result.turn_id):
            handoff_contact_add(handoff=handoff, name=name, contact=from_email)
    language = result.meta.get("language", "en")
    first = name.split()[0] if name else ""
    with_name, without = _GREETINGS["sw" if language == "sw" else "en"]
    greeting = with_name.format(name=first) if first else without
    answer = _one_exclamation(plain_text(result.answer))
    paragraphs = [greeting, answer]
    if not result.refusal_reason:
        paragraphs.append(_CLOSINGS["sw" if language == "sw" else "en"])
    meta = {**result.meta, "session_id": result.session_id, "turn_id": result.turn_id, "intent": result.intent,
            "question": question[:500]}
    return EmailDraft(suggested_subject=suggested_subject(subject), customer_name=name,
                      draft="\n\n".join(paragraphs), citations=result.citations,
                      refusal_reason=result.refusal_reason, meta=meta)
