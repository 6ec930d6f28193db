"""The read-only telemetry admin and the synthetic-telemetry command."""
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from telemetry.models import GapGroup, RetrievalLog
from telemetry.services import retrieval_log_record


def test_owners_can_browse_but_not_edit_the_log(tenant, tenant_client):
    row = retrieval_log_record(message_preview="Is there parking?", intent="other")
    tenant_client.force_login(get_user_model().objects.create_superuser(username="boss", password=None, email=""))
    listing = tenant_client.get("/admin/telemetry/retrievallog/")
    assert listing.status_code == 200 and "Is there parking?" in listing.content.decode()
    assert tenant_client.get("/admin/telemetry/retrievallog/add/").status_code == 403
    detail = tenant_client.get(f"/admin/telemetry/retrievallog/{row.pk}/change/")
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()


def test_the_synthetic_command_fills_a_tenant(tenant, capsys):
    call_command("telemetry_synthetic", tenant="test_tenant", turns=120, gap_events=15, seed=3)
    assert RetrievalLog.objects.count() == 120
    assert sum(GapGroup.objects.values_list("count", flat=True)) == 15
    assert "120 turns" in capsys.readouterr().out


def test_the_synthetic_command_rejects_an_unknown_tenant(tenant):
    with pytest.raises(CommandError, match="No tenant"):
        call_command("telemetry_synthetic", tenant="nope")
