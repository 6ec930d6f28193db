"""Back-dated rows (synthetic traffic, imports) are counted even when the days' rollups were already kept."""
import datetime as dt

import pytest
from django.utils import timezone

from telemetry.models import RetrievalDay
from telemetry.selectors import retrieval_health
from telemetry.synthetic import synthetic_telemetry_write

pytestmark = pytest.mark.django_db


def test_synthetic_rows_written_after_a_dashboard_view_still_show_on_the_dashboard(tenant):
    now = timezone.now()
    assert retrieval_health(days=30, now=now).totals.turns == 0
    assert RetrievalDay.objects.exists()  # the empty past days are now kept
    result = synthetic_telemetry_write(turns=120, days=20, seed=3, now=now - dt.timedelta(minutes=1))
    assert retrieval_health(days=30, now=now).totals.turns == result.logs == 120
