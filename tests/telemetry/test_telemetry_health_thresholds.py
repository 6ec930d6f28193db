"""ok / warn / alert at and around every SOP threshold."""
import pytest

from telemetry.health import TARGETS, HealthFigure, health_figure, overall_state


@pytest.mark.parametrize("metric, value, state", [
    # Empty retrieval: target < 5%, alert > 10%.
    ("empty_rate", 0.0, "ok"), ("empty_rate", 4.9, "ok"), ("empty_rate", 5.0, "warn"), ("empty_rate", 10.0, "warn"),
    ("empty_rate", 10.1, "alert"),
    # FTS fallback: target < 10%, alert > 20%.
    ("fallback_rate", 9.9, "ok"), ("fallback_rate", 10.0, "warn"), ("fallback_rate", 20.0, "warn"),
    ("fallback_rate", 20.1, "alert"),
    # Retrieved tokens: target 800-1,500, alert > 2,000 or < 400.
    ("avg_retrieved_tokens", 399.9, "alert"), ("avg_retrieved_tokens", 400.0, "warn"),
    ("avg_retrieved_tokens", 799.9, "warn"), ("avg_retrieved_tokens", 800.0, "ok"),
    ("avg_retrieved_tokens", 1500.0, "ok"), ("avg_retrieved_tokens", 1500.1, "warn"),
    ("avg_retrieved_tokens", 2000.0, "warn"), ("avg_retrieved_tokens", 2000.1, "alert"),
    # Trivial turns: target 15-30%, alert < 5% or > 50%.
    ("trivial_rate", 4.9, "alert"), ("trivial_rate", 5.0, "warn"), ("trivial_rate", 14.9, "warn"),
    ("trivial_rate", 15.0, "ok"), ("trivial_rate", 30.0, "ok"), ("trivial_rate", 30.1, "warn"),
    ("trivial_rate", 50.0, "warn"), ("trivial_rate", 50.1, "alert"),
    # p95 prompt: target < 5,500, alert > 6,500.
    ("p95_prompt_tokens", 5499.9, "ok"), ("p95_prompt_tokens", 5500.0, "warn"), ("p95_prompt_tokens", 6500.0, "warn"),
    ("p95_prompt_tokens", 6500.1, "alert"),
    # Embedding latency: target < 100 ms, alert > 200 ms.
    ("avg_embedding_ms", 99.9, "ok"), ("avg_embedding_ms", 100.0, "warn"), ("avg_embedding_ms", 200.0, "warn"),
    ("avg_embedding_ms", 200.1, "alert"),
    # Retrieval latency: target < 50 ms, alert > 100 ms.
    ("avg_retrieval_ms", 49.9, "ok"), ("avg_retrieval_ms", 50.0, "warn"), ("avg_retrieval_ms", 100.0, "warn"),
    ("avg_retrieval_ms", 100.1, "alert"),
])
def test_state_at_and_around_each_threshold(metric, value, state):
    assert health_figure(metric=metric, value=value).state == state


def test_every_sop_metric_has_a_target():
    assert sorted(TARGETS) == sorted(["empty_rate", "fallback_rate", "avg_retrieved_tokens", "trivial_rate",
                                      "p95_prompt_tokens", "avg_embedding_ms", "avg_retrieval_ms"])


def test_no_value_is_no_data():
    assert health_figure(metric="empty_rate", value=None).state == "no_data"


def _fig(state):
    return HealthFigure(metric="m", label="m", value=1, unit="", target="", alert_if="", state=state)


def test_the_overall_state_is_the_worst_one():
    assert overall_state([_fig("ok"), _fig("warn"), _fig("no_data")]) == "warn"
    assert overall_state([_fig("ok"), _fig("alert"), _fig("warn")]) == "alert"
    assert overall_state([_fig("ok"), _fig("no_data")]) == "ok"
    assert overall_state([_fig("no_data")]) == "no_data"
