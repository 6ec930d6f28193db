"""The refusal decision's second stage: the cross-encoder's window, weights as the training writes them, how
its reading combines with the first stage, and the first stage deciding alone when it cannot read."""
from __future__ import annotations

import logging

import pytest
from retrieval_kb import Cand, kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import answerability, fetch_snippets
from knowledge.retrieval.answerability import Reader, best_window, second_stage, sentences, windows
from knowledge.retrieval.relevance import decide, load_model, probability

PARKING = ("Parking", "We are on the first floor of Westgate Mall. Free parking for two hours in the mall's basement; "
                      "validate your ticket at reception. Matatu stage 14 stops at the gate. "
                      "The lift is next to the pharmacy.")


def test_a_long_snippet_is_read_by_the_window_sharing_most_words_with_the_question():
    parts = sentences("Keywords: parking, hours\nWe open at 8.\nParking is free in the basement. Bring your ticket.")
    assert parts[0] == "We open at 8."  # the authoring line is not read
    assert windows("Visit", ["One two three."]) == ["Visit. One two three."]
    long_body = (" ".join(f"Sentence {i} is about topic {i} with words." for i in range(30))
                 + " The lift is by the pharmacy.")
    window = best_window("Where is the lift?", "Visit", long_body)
    assert window.startswith("Visit. ") and "lift" in window and len(window.split()) < 70


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A weights file as the training writes it (the untrained three-layer start: the file format and the
    reading path are under test here, not what a training learned)."""
    from knowledge.retrieval.answerability import build, write_weights

    model, _tokenizer = build(None, layers=3)
    path = tmp_path_factory.mktemp("answerability") / "answerability.safetensors"
    write_weights(model, path, {"layers": 3, "source": "test"})
    return path


def test_weights_written_as_the_training_writes_them_are_read_back_and_score_a_pair(weights):
    reader = Reader(weights)
    score = reader.score("Is there free parking at the mall?", *PARKING)
    assert score is not None and 0.0 < score < 1.0
    again = Reader(weights).score_pairs("Is there free parking at the mall?",
                                         [best_window("Is there free parking at the mall?", *PARKING)])
    assert again == [pytest.approx(score)]


def test_a_swahili_window_is_not_read(weights):
    swahili = ("Maegesho", "Kuna maegesho ya bure kwa saa mbili katika ghorofa ya chini ya jengo. "
                           "Onyesha tiketi yako mapokezi.")
    assert Reader(weights).score("Is there free parking?", *swahili) is None


def test_the_second_stage_combines_both_readings_as_fitted():
    stage = {"coefficients": [1.0, 2.0], "intercept": 0.0, "threshold": 0.5, "first_threshold": 0.1}
    assert second_stage(0.5, 0.5, stage) == pytest.approx(0.5)
    assert second_stage(0.5, 0.9, stage) > second_stage(0.5, 0.6, stage) > 0.5 > second_stage(0.5, 0.2, stage)


@pytest.fixture
def staged_model():
    """The shipped first stage with a second stage whose cut sits at the combined reading's midpoint."""
    model = dict(load_model())
    model.pop("keyword_only", None)
    model["second_stage"] = {"coefficients": [1.0, 1.0], "intercept": 0.0, "threshold": 0.5, "first_threshold": 0.0}
    return model


@pytest.mark.django_db
@pytest.mark.parametrize("reading, refused", [(0.97, False), (0.001, True)])
def test_the_cross_encoders_reading_decides_when_a_second_stage_is_fitted(monkeypatch, staged_model, reading,
                                                                            refused):
    read = []
    monkeypatch.setattr(answerability, "answerability", lambda text, title, body: read.append((text, title)) or reading)
    near, far = Cand(*PARKING, similarity=0.7), Cand("Gift cards", "Gift cards never expire.", similarity=0.3)
    decision = decide([far, near], language="sw", question="Kuna parking?", words=["parking"],
                      read_text="is there parking", model=staged_model)
    assert read == [("is there parking", "Parking")]  # the best by meaning, in the text it was embedded as
    assert decision.answerability == reading and decision.first_probability is not None
    assert (decision.refusal_reason == "no_relevant_context") is refused
    assert decision.threshold == 0.5


@pytest.mark.django_db
def test_a_first_stage_veto_refuses_whatever_the_cross_encoder_reads(monkeypatch, staged_model):
    monkeypatch.setattr(answerability, "answerability", lambda *_args: 0.999)
    staged_model["second_stage"]["first_threshold"] = 1.0
    decision = decide([Cand(*PARKING)], language="en", question="Is there parking?", model=staged_model)
    assert decision.refusal_reason == "no_relevant_context" and decision.answerability == 0.999


@pytest.mark.django_db
def test_unreadable_weights_leave_the_first_stage_deciding_alone(monkeypatch, staged_model, tmp_path, caplog):
    broken = tmp_path / "answerability.safetensors"
    broken.write_bytes(b"not a weights file")
    monkeypatch.setattr(answerability, "_reader", Reader(broken))
    with caplog.at_level(logging.WARNING, logger="knowledge.retrieval.answerability"):
        decision = decide([Cand(*PARKING)], language="en", question="Is there parking?", model=staged_model)
    assert decision.answerability is None and decision.first_probability is None
    assert decision.probability == pytest.approx(probability(decision.signals, staged_model))
    assert decision.threshold == staged_model["threshold"]
    assert "answerability weights unavailable" in caplog.text


@pytest.mark.django_db
def test_a_retrieval_records_both_stages_when_a_second_one_is_fitted(kb, mode, monkeypatch, staged_model, weights):
    from knowledge.retrieval import relevance

    monkeypatch.setattr(relevance, "load_model", lambda: staged_model)
    monkeypatch.setattr(answerability, "_reader", Reader(weights))
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query="Is there parking at the spa?", channel="chat")
    refusal = result.debug["refusal"]
    assert 0.0 < refusal["answerability"] < 1.0 and 0.0 < refusal["first_probability"] < 1.0
    assert refusal["threshold"] == staged_model["second_stage"]["threshold"]
    assert result.relevance == refusal["probability"]
    assert (result.refusal_reason is None) == (refusal["probability"] >= 0.5)
