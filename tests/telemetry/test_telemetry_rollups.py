"""Day rollups: sealed days are aggregated once and kept, and merging them is exact."""
from __future__ import annotations

import datetime as dt
import random
from collections import Counter

from django.db import connection
from django.test.utils import CaptureQueriesContext

from factories_telemetry import NOW, known_turns
from telemetry.models import RetrievalDay, RetrievalLog
from telemetry.rollups import Block, rollups_rebuild
from telemetry.selectors import retrieval_health
from telemetry.services import retrieval_log_record


def test_sealed_days_are_kept_and_today_is_live(tenant):
    known_turns()
    first = retrieval_health(days=7, now=NOW).as_dict()
    # 2026-03-04 .. 03-09 are over; 03-10 (today at NOW) is not.
    assert sorted(RetrievalDay.objects.values_list("day", flat=True)) == [dt.date(2026, 3, d) for d in range(4, 10)]
    assert RetrievalDay.objects.get(day=dt.date(2026, 3, 9)).data["total"]["turns"] == 2
    with CaptureQueriesContext(connection) as queries:
        again = retrieval_health(days=7, now=NOW).as_dict()
    assert again == first
    # Kept days are read, not recomputed: no aggregate over the log for days before today.
    day_scans = [q["sql"] for q in queries.captured_queries if "telemetry_retrievallog" in q["sql"]
                 and "2026-03-04" in q["sql"]]
    assert day_scans == []


def test_a_kept_day_does_not_see_rows_imported_later_until_rebuilt(tenant):
    known_turns()
    assert retrieval_health(days=7, now=NOW).totals.turns == 6
    retrieval_log_record(created_at=NOW - dt.timedelta(days=2), intent="other")  # an import into a sealed day
    assert retrieval_health(days=7, now=NOW).totals.turns == 6
    assert rollups_rebuild(since=dt.date(2026, 3, 8)) == 2
    assert retrieval_health(days=7, now=NOW).totals.turns == 7


def test_the_histogram_p95_is_postgres_percentile_cont(tenant):
    rng = random.Random(5)
    values = [rng.randint(1500, 7000) for _ in range(517)] + [3000] * 40
    for value in values:
        retrieval_log_record(prompt_tokens=value, created_at=NOW)
    with connection.cursor() as cursor:
        cursor.execute("select percentile_cont(0.95) within group (order by prompt_tokens) from telemetry_retrievallog")
        expected = cursor.fetchone()[0]
    counts = Counter(RetrievalLog.objects.values_list("prompt_tokens", flat=True))
    block = Block(hist_v=list(counts), hist_c=list(counts.values()))
    assert abs(block.p95_prompt() - expected) < 1e-9
    assert retrieval_health(days=7, now=NOW).totals.p95_prompt_tokens == round(expected, 1)


def test_small_samples_interpolate_like_postgres():
    assert Block(hist_v=[100], hist_c=[1]).p95_prompt() == 100
    assert Block(hist_v=[200, 100], hist_c=[1, 1]).p95_prompt() == 195.0
    assert Block().p95_prompt() is None


def test_merged_blocks_repeat_values_and_stay_exact():
    one = Block(hist_v=[100, 300], hist_c=[10, 1])
    two = Block(hist_v=[300, 100, 200], hist_c=[1, 5, 3])
    merged = Block().merge(one).merge(two)
    # 15 x 100, 3 x 200, 2 x 300: rank 0.95 * 19 = 18.05 lies between the two 300s.
    assert merged.p95_prompt() == 300.0
    # 19 x 100, 1 x 200: rank 18.05 lies between the last 100 and the 200.
    assert round(Block(hist_v=[100, 200], hist_c=[19, 1]).p95_prompt(), 6) == 105.0


def test_a_block_round_trips_through_json():
    block = Block(turns=3, empty=1, prompt_sum=9000, embed_sum=12.5, hist_v=[3000, 2500], hist_c=[2, 1])
    assert Block.from_json(block.to_json()) == block
