"""Build knowledge/retrieval/question_words.json: how common each word is in everyday requests.

    .venv/bin/python bench/build_word_prior.py

Source: the 15,000 in-scope TRAINING requests of CLINC150 (../shared/eval/public/raw/clinc150; CC BY 3.0),
requests people make of an assistant across 150 everyday intents. None of them is an evaluation question
(the bench's generic unanswerables come from CLINC's separate out-of-scope split). The refusal decision
uses the table to tell a question's salient words ("valet", "BPA") from words any request uses ("need",
"time", "much"): the rarer a word is in everyday requests, the more an answer must cover it.
"""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "eval" / "public" / "raw" / "clinc150" / "data_full.json.gz"
OUT = ROOT / "knowledge" / "retrieval" / "question_words.json"
MIN_DOCS = 3  # rarer words are left out: absent from the table means rare
WORD = re.compile(r"[^\W_]+", re.UNICODE)


def main() -> int:
    data = json.loads(gzip.decompress(SOURCE.read_bytes()))
    requests = [text for text, _intent in data["train"]]
    frequency = Counter()
    for text in requests:
        frequency.update(set(WORD.findall(text.lower())))
    table = {word: count for word, count in sorted(frequency.items()) if count >= MIN_DOCS}
    OUT.write_text(json.dumps({"source": "CLINC150 in-scope train requests (bench/build_word_prior.py)",
                               "documents": len(requests), "min_documents": MIN_DOCS, "df": table},
                              separators=(",", ":"), sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(table)} words from {len(requests)} requests "
          f"({OUT.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
