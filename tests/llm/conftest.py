"""LLM path tests: the real Anthropic/OpenAI clients on the mocked wire formats of tests/shaping/shaping_helpers.py."""
import sys
from pathlib import Path

# No package: the shared mocked transports live beside the shaping tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "shaping"))
