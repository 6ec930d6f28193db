"""Fixed-window rate limits in the shared cache; keys carry the tenant schema (django-tenants' make_key)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from django.core.cache import cache


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    remaining: int
    retry_after: int  # seconds until the window resets


def rate_limit_hit(*, bucket: str, limit: int, window_seconds: int = 60) -> RateDecision:
    """Count one request in `bucket`; refuse once `limit` requests fell in the current window."""
    now = time.time()
    window = int(now // window_seconds)
    key = f"ratelimit:{bucket}:{window}"
    # add() is atomic: the first request of a window creates the counter.
    if cache.add(key, 1, timeout=window_seconds + 1):
        count = 1
    else:
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, timeout=window_seconds + 1)
            count = 1
    retry_after = max(1, int((window + 1) * window_seconds - now))
    return RateDecision(allowed=count <= limit, remaining=max(0, limit - count), retry_after=retry_after)
