"""Knowledge tests embed with the instant fake unless they ask for `real_embedder`."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fake_unless_real(request):
    if "real_embedder" not in request.fixturenames:
        request.getfixturevalue("fake_embedder")
