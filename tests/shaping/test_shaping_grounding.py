"""Grounding check (figures must come from cited sources or facts) and the output filter (no leaked prompt)."""
from __future__ import annotations

import pytest

from conversations.grounding import LEAK_RUN_WORDS, check_grounding, check_output, cited_refs, extract_claims
from conversations.prompting import assemble_prompt
from shaping_helpers import BEHAVIOUR, CANCELLATION, CORE, DEPOSIT, GUARDRAIL, GUARDRAIL_SECRET, PARKING


class HoursFacts:
    def to_dict(self):
        return {"timezone": "Africa/Nairobi", "today": "2026-06-13", "currency": "KES",
                "services": [{"name": "Deep Tissue Massage", "duration_minutes": 60, "price": "5500.00",
                              "currency": "KES", "price_text": "KES 5,500"}],
                "matched_services": [], "days_asked": [{"date": "2026-12-24", "ranges": [["09:00", "15:00"]]}],
                "weekly_hours": {"Monday": "09:00-20:00", "Sunday": "10:00-17:00"}}

    def sentences(self, *, language):
        return [("facts:hours", "Thursday 24 December 2026 (Christmas Eve): open 09:00-15:00.")]


@pytest.fixture
def prompt():
    return assemble_prompt(question="Tell me about deposits and hours", language="en", channel="chat",
                           snippets=[PARKING, CANCELLATION, DEPOSIT], facts=HoursFacts(), core_sections=list(CORE))


@pytest.mark.parametrize("text, expected", [
    ("It costs KES 4,500.", [("price", ("4500",))]),
    ("Only 5500/= or Ksh. 2.8k", [("price", ("5500",)), ("price", ("2800",))]),
    ("Bei ni shilingi 4500", [("price", ("4500",))]),
    ("Open 9am to 8 p.m.", [("time", ("09:00",)), ("time", ("20:00",))]),
    ("From 09:00-20:00", [("time", ("09:00",)), ("time", ("20:00",))]),
    ("Doors at 9:30", [("time", ("09:30", "21:30"))]),
    ("We close at noon", [("time", ("12:00",))]),
    ("On 24 December, Dec 25th and 2027-01-01", [("date", ("12-24",)), ("date", ("12-25",)), ("date", ("01-01",))]),
    ("Tarehe 17 Agosti tumefunga", [("date", ("08-17",))]),
    ("Call +254 712 345 678 or 0712-345-678", [("phone", ("712345678",)), ("phone", ("712345678",))]),
    ("A 30% deposit, asilimia 50 ya bei", [("percent", ("30",)), ("percent", ("50",))]),
    ("Till 5123987", [("number", ("5123987",))]),
    ("We are open 24/7 for 3 guests, 60 minutes", []),
])
def test_figures_are_extracted_in_canonical_form(text, expected):
    assert [(claim.kind, claim.values) for claim in extract_claims(text)] == expected


def test_an_answer_quoting_cited_figures_is_grounded(prompt):
    answer = ("A 30% deposit is needed for bookings worth KES 10,000 or more [3]. Pay it to Till 5123987 within "
              "2 hours [3]. Parking is free for 3 hours [1].")
    report = check_grounding(answer=answer, prompt=prompt)
    assert report.ok and report.cited_refs == [3, 1] and report.unsupported == []


def test_figures_from_the_structured_facts_are_always_allowed(prompt):
    answer = ("On 24 December we are open 9am to 3pm [4], and on Mondays until 8 pm. A deep tissue massage is "
              "KES 5,500 [1].")
    assert check_grounding(answer=answer, prompt=prompt).ok


def test_an_invented_price_fails_grounding(prompt):
    report = check_grounding(answer="The deposit is KES 2,000 [3].", prompt=prompt)
    assert not report.ok
    assert [(c.kind, c.text) for c in report.unsupported] == [("price", "kes 2,000")]


def test_a_figure_from_a_source_the_answer_does_not_cite_is_not_supported(prompt):
    # 50% is in the cancellation snippet [2], but the answer cites only the parking one.
    report = check_grounding(answer="Late cancellations cost 50% [1].", prompt=prompt)
    assert not report.ok and [c.text for c in report.unsupported] == ["50%"]


def test_an_invented_time_date_and_phone_fail_grounding(prompt):
    report = check_grounding(answer="Call 0799 111 222 before 6pm on 3 March [1].", prompt=prompt)
    assert [c.kind for c in report.unsupported] == ["phone", "time", "date"]


def test_citing_a_ref_that_was_never_given_fails(prompt):
    report = check_grounding(answer="Parking is free [1][9].", prompt=prompt)
    assert not report.ok and report.invalid_refs == [9]


def test_an_answer_without_markers_is_checked_against_everything_given(prompt):
    assert check_grounding(answer="Cancelling late costs 50% of the price.", prompt=prompt).ok
    assert not check_grounding(answer="Cancelling late costs 75% of the price.", prompt=prompt).ok


def test_cited_refs_reads_single_and_grouped_markers():
    assert cited_refs("a [2] b [1, 3] c [2]") == [2, 1, 3]


def test_the_output_filter_catches_a_repeated_system_message(prompt):
    start = prompt.system.index("Answering:")
    # A paraphrase-free copy, minus the section names (which are caught on their own).
    leaked = "Sure! My instructions are: " + prompt.system[start:start + 600].replace("raw_data_json", "the data")
    check = check_output(answer=leaked, prompt=prompt)
    assert check.leaked and check.reason == "system_message"


@pytest.mark.parametrize("section", [GUARDRAIL, GUARDRAIL_SECRET, BEHAVIOUR], ids=lambda s: s.key)
def test_the_output_filter_catches_repeated_guardrail_and_behaviour_text(prompt, section):
    check = check_output(answer=f"Here are my rules: {section.body}", prompt=prompt)
    assert check.leaked and check.reason == f"{section.role}:{section.key}"


def test_the_output_filter_catches_section_names(prompt):
    assert check_output(answer="My raw_data_json says parking is free.", prompt=prompt).reason == "section_name"
    assert check_output(answer="<business_rules> are secret", prompt=prompt).leaked


def test_ordinary_answers_and_short_overlaps_pass_the_output_filter(prompt):
    for answer in ["Free parking is available for guests in the basement for up to 3 hours [1].",
                   "Please check with your own doctor first, and we will gladly help you book.",
                   "Our manager will call you back within two working hours."]:
        assert not check_output(answer=answer, prompt=prompt).leaked, answer


def test_quoting_knowledge_that_shares_words_with_a_guardrail_is_allowed():
    shared = "Suggest they check with their own doctor before booking a treatment."
    from shaping_helpers import snippet

    medical = snippet("medical_note", f"Pregnant guests are welcome. {shared}")
    prompt = assemble_prompt(question="pregnant?", language="en", channel="chat", snippets=[medical],
                             core_sections=[GUARDRAIL])
    assert len(shared.split()) >= LEAK_RUN_WORDS
    assert not check_output(answer=f"Pregnant guests are welcome. {shared} [1]", prompt=prompt).leaked
