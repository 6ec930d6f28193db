"""Would a classifier learned from the labelled questions beat the product's intent rules? Leave one business out.

    .venv/bin/python bench/intent_learned.py

Only the choosing folds' businesses (bench/unseen_data.py folds 0-2) and the development tenant are read. For each
business in turn, a multinomial logistic regression is fitted on the others' labelled questions and scored on it,
so no question is classified by a model that saw its business. Features compared (C, the inverse regularisation,
over a small grid):
- the question's MiniLM vector (a Swahili question's glossary reading, as retrieval embeds it);
- that vector plus the rules' votes per intent, the payment/place/policy topic flag, whether a services row is
  named and whether the question is Swahili;
- those plus the product classifier's own verdict (a stacked model that may learn where to overrule it);
- the rules and the verdict alone.
Printed: accuracy over all of them and over the written businesses alone, beside the product classifier's.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, intent_accuracy  # noqa: E402

GRID_C = (0.3, 1.0, 3.0, 10.0)


def main() -> int:
    import numpy
    from sklearn.linear_model import LogisticRegression

    intent_accuracy.setup()
    from conversations import intents
    from conversations.facts import named_services
    from conversations.i18n import detect_language
    from knowledge.embeddings import embed_query
    from knowledge.retrieval.language import expand_swahili

    items, _ = intent_accuracy.load_businesses("choose")
    items += [dict(item, business="aria_spa") for item in intent_accuracy.load(intent_accuracy.DEFAULT_EVAL)]
    labels = list(intents.INTENTS)
    swahili = [detect_language(item["text"]) == "sw" for item in items]
    named = [bool(named_services(item["text"], item["services"])) for item in items]
    product = [intents.classify(item["text"], embed=not sw, names_service=name).intent
               for item, sw, name in zip(items, swahili, named)]
    vectors = numpy.array([embed_query((expand_swahili(item["text"]).text or item["text"]) if sw else item["text"])
                           for item, sw in zip(items, swahili)], dtype="float32")
    rules = numpy.array([[intents.rule_scores(item["text"]).get(label, 0.0) for label in labels]
                         + [float(intents.policy_topic(item["text"])), float(name), float(sw)]
                         for item, name, sw in zip(items, named, swahili)], dtype="float32")
    verdict = numpy.array([[float(p == label) for label in labels] for p in product], dtype="float32")
    truth = numpy.array([labels.index(item["intent"]) for item in items])
    business = numpy.array([item["business"] for item in items])
    written = business != "aria_spa"

    def accuracy(predicted) -> tuple[float, float]:
        return float((predicted == truth).mean()), float((predicted[written] == truth[written]).mean())

    rows = [["product classifier", "", *map(common.fmt, accuracy(numpy.array([labels.index(p) for p in product])))]]
    for name, features in (("vector", vectors), ("vector + rules", numpy.hstack([vectors, rules])),
                           ("vector + rules + verdict", numpy.hstack([vectors, rules, verdict])),
                           ("rules + verdict", numpy.hstack([rules, verdict]))):
        for c in GRID_C:
            predicted = numpy.empty(len(truth), dtype=int)
            for held in sorted(set(business)):
                model = LogisticRegression(C=c, max_iter=3000).fit(features[business != held],
                                                                   truth[business != held])
                predicted[business == held] = model.predict(features[business == held])
            rows.append([name, c, *map(common.fmt, accuracy(predicted))])
    print(common.table(["features", "C", "all (leave one business out)", "written businesses"], rows,
                       title=f"Intent, choosing folds and the development tenant: {len(items)} labelled questions"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
