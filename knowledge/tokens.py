"""A cheap token estimate for budgets and the admin (no tokenizer download, deterministic)."""
from __future__ import annotations

import math
import re

_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def token_estimate(text: str) -> int:
    """Estimate the LLM token count of `text` (about 4 characters or 0.75 words per token)."""
    if not text:
        return 0
    # Words and punctuation marks, scaled for sub-word splits; the character rule catches long
    # identifiers and numbers that one "word" understates. The larger of the two is safer for budgets.
    pieces = len(_WORD_RE.findall(text))
    return max(math.ceil(pieces * 1.3), math.ceil(len(text) / 4))
