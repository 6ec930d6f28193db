"""Sentence focus: a candidate whose one sentence says what the question asks ranks above one that shares the same
words scattered over several sentences."""
from __future__ import annotations

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.candidates import Candidate
from knowledge.retrieval.focus import add_focus

HYGIENE = ("hygiene", "Clean tools and hygiene",
           "Clipper blades are sprayed with disinfectant after every client. Every shave uses a new single-use razor "
           "blade, opened in front of you. Capes are washed daily.")
AFTERCARE = ("aftercare", "After your cut or shave",
             "After a fresh shave, use only alcohol-free aftershave. Razor bumps usually settle in 2 to 3 days. Most "
             "clients come back every 2 to 3 weeks, and a new line-up between cuts is cheaper.")


def _candidate(key: str, title: str, body: str, score: float) -> Candidate:
    return Candidate(id=len(key), key=key, version=1, title=title, body=body, category="general",
                     status="canonical", token_count=40, score=score)


def test_the_candidate_saying_it_in_one_sentence_gains_most():
    hygiene, aftercare = _candidate(*HYGIENE, score=0.49), _candidate(*AFTERCARE, score=0.56)
    add_focus([hygiene, aftercare], question="Do you use a new razor blade for every shave?", weight=0.2)
    assert hygiene.focus == pytest.approx(1.0)
    assert aftercare.focus < 0.5
    assert hygiene.score > aftercare.score


def test_no_weight_no_question_words_or_a_single_candidate_changes_nothing():
    for candidates, question, weight in (([_candidate(*HYGIENE, score=0.5), _candidate(*AFTERCARE, score=0.6)],
                                          "Do you use a new razor blade?", 0.0),
                                         ([_candidate(*HYGIENE, score=0.5), _candidate(*AFTERCARE, score=0.6)],
                                          "Do you?", 0.2),
                                         ([_candidate(*HYGIENE, score=0.5)], "Do you use a new razor blade?", 0.2)):
        before = [c.score for c in candidates]
        add_focus(candidates, question=question, weight=weight)
        assert [c.score for c in candidates] == before


@pytest.mark.django_db
def test_retrieval_leads_with_the_sentence_that_answers(kb, mode):
    mode("hybrid")
    for key, title, body in (HYGIENE, AFTERCARE):
        kb(key=key, title=title, body=body)
    kb(key="beard", title="Beard grooming and shaves",
       body="A hot towel shave with a straight razor takes 30 minutes. We shape beards of every length.")
    retrieval = fetch_snippets(intent="other", query="Do you use a new razor blade for every shave?", channel="chat")
    assert retrieval.snippets[0].key == "hygiene"
    fusion = {row["key"]: row for row in retrieval.debug["fusion"]}
    assert fusion["hygiene"]["focus"] > fusion["beard"]["focus"]
