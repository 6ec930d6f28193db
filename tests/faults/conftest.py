"""Fault, audit and privacy tests: the fake embedder on request (`fake_embedder`), the small spa (`spa`, `chat`)
for end-to-end chat faults, the mocked LLM wire formats of tests/shaping/shaping_helpers.py."""
import sys
from pathlib import Path

# shaping_helpers.py lives beside its own tests; basenames are unique across the suite.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shaping"))
