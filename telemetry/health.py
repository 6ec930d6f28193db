"""The SOP's monitoring targets and the ok / warn / alert state of a figure against them."""
from __future__ import annotations

from dataclasses import dataclass

OK = "ok"
WARN = "warn"
ALERT = "alert"
NO_DATA = "no_data"


@dataclass(frozen=True)
class Target:
    """A monitoring target: ok inside [ok_min, ok_max], alert outside [alert_min, alert_max], warn between.

    Bounds follow the SOP's wording: "< 5%" is ok below 5 (so exactly 5 warns) and "alert
    > 10%" alerts above 10 (so exactly 10 warns); a range "800-1,500" includes its ends.
    """

    metric: str
    label: str
    unit: str
    target_text: str
    alert_text: str
    ok_below: float | None = None  # ok when value < ok_below
    ok_min: float | None = None  # ok when ok_min <= value <= ok_max
    ok_max: float | None = None
    alert_above: float | None = None  # alert when value > alert_above
    alert_below: float | None = None  # alert when value < alert_below

    def state(self, value: float | None) -> str:
        """ok, warn or alert for a value; no_data when there is nothing to judge."""
        if value is None:
            return NO_DATA
        if (self.alert_above is not None and value > self.alert_above) or (
                self.alert_below is not None and value < self.alert_below):
            return ALERT
        if self.ok_below is not None:
            return OK if value < self.ok_below else WARN
        if self.ok_min is not None and self.ok_max is not None:
            return OK if self.ok_min <= value <= self.ok_max else WARN
        return OK


TARGETS: dict[str, Target] = {target.metric: target for target in (
    Target("empty_rate", "Empty-retrieval rate", "%", "< 5%", "> 10%", ok_below=5, alert_above=10),
    Target("fallback_rate", "FTS fallback rate", "%", "< 10%", "> 20%", ok_below=10, alert_above=20),
    Target("avg_retrieved_tokens", "Avg retrieved tokens per turn", "tokens", "800-1,500", "> 2,000 or < 400",
           ok_min=800, ok_max=1500, alert_above=2000, alert_below=400),
    Target("trivial_rate", "Trivial-turn (cache) rate", "%", "15-30%", "< 5% or > 50%",
           ok_min=15, ok_max=30, alert_above=50, alert_below=5),
    Target("p95_prompt_tokens", "p95 total prompt tokens", "tokens", "< 5,500", "> 6,500",
           ok_below=5500, alert_above=6500),
    Target("avg_embedding_ms", "Avg embedding latency", "ms", "< 100 ms", "> 200 ms", ok_below=100, alert_above=200),
    Target("avg_retrieval_ms", "Avg retrieval latency", "ms", "< 50 ms", "> 100 ms", ok_below=50, alert_above=100),
)}


@dataclass(frozen=True)
class HealthFigure:
    """One dashboard figure with its target and state."""

    metric: str
    label: str
    value: float | None
    unit: str
    target: str
    alert_if: str
    state: str

    def as_dict(self) -> dict:
        return {"metric": self.metric, "label": self.label, "value": self.value, "unit": self.unit,
                "target": self.target, "alert_if": self.alert_if, "state": self.state}


def health_figure(*, metric: str, value: float | None) -> HealthFigure:
    """Judge one figure against its SOP target."""
    target = TARGETS[metric]
    return HealthFigure(metric=metric, label=target.label, value=value, unit=target.unit,
                        target=target.target_text, alert_if=target.alert_text, state=target.state(value))


def overall_state(figures: list[HealthFigure]) -> str:
    """The worst state among figures that have data."""
    states = {figure.state for figure in figures}
    for state in (ALERT, WARN, OK):
        if state in states:
            return state
    return NO_DATA
