"""Who may see the telemetry pages and API, and that each tenant sees only its own data."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from telemetry.models import Digest, GapGroup
from telemetry.services import retrieval_log_record

PAGES = ["/telemetry/", "/telemetry/?days=30", "/telemetry/gaps/", "/telemetry/gaps/?status=resolved",
         "/telemetry/digests/"]


def _user(username="owner", *, staff=True, email="owner@spa.test", password=None):
    # No password unless a test signs in with one: hashing costs about a second on a busy machine.
    return get_user_model().objects.create_user(username=username, password=password, is_staff=staff, email=email)


def _group(label: str, count: int = 2) -> GapGroup:
    from django.utils import timezone

    now = timezone.now()
    return GapGroup.objects.create(label=label, centroid=[1.0] + [0.0] * 383, count=count, examples=[label],
                                   languages={"en": count}, first_seen=now, last_seen=now)


@pytest.fixture
def two_tenants_with_data(tenant, other_tenant):
    """Marked rows in both schemas (the same transaction; the connection switches schema)."""
    retrieval_log_record(message_preview="mine", intent="intent-of-test-tenant", retrieved_sections=[{"key": "mine-key"}])
    _group("Question only test_tenant has")
    Digest.objects.create(day="2026-03-01", subject="Digest of test_tenant", text_body="x")
    connection.set_tenant(other_tenant)
    for _ in range(3):
        retrieval_log_record(message_preview="theirs", intent="intent-of-other", retrieved_sections=[{"key": "their-key"}])
    _group("Question only test_other has")
    Digest.objects.create(day="2026-03-02", subject="Digest of test_other", text_body="y")
    connection.set_tenant(tenant)
    return tenant, other_tenant


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_visitors_are_sent_to_sign_in(tenant_client, path):
    response = tenant_client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/telemetry/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_a_tenant_user_sees_every_page(tenant, tenant_client, path):
    tenant_client.force_login(_user(staff=False))
    assert tenant_client.get(path).status_code == 200


def test_a_non_staff_user_can_sign_in_on_the_telemetry_login(tenant, tenant_client):
    _user("reader", staff=False, password="pw-123456")
    response = tenant_client.post("/telemetry/login/", {"username": "reader", "password": "pw-123456",
                                                        "next": "/telemetry/gaps/"})
    assert (response.status_code, response["Location"]) == (302, "/telemetry/gaps/")
    assert tenant_client.get("/telemetry/gaps/").status_code == 200


def test_each_tenant_sees_only_its_own_rows(two_tenants_with_data, client_for):
    tenant, other = two_tenants_with_data
    client = client_for(tenant)
    client.force_login(_user())
    dashboard = client.get("/telemetry/").content.decode()
    assert "intent-of-test-tenant" in dashboard and "mine-key" in dashboard
    assert "intent-of-other" not in dashboard and "their-key" not in dashboard
    assert client.get("/telemetry/").context["health"].totals.turns == 1
    gaps = client.get("/telemetry/gaps/").content.decode()
    assert "Question only test_tenant has" in gaps and "Question only test_other has" not in gaps
    digests = client.get("/telemetry/digests/").content.decode()
    assert "Digest of test_tenant" in digests and "Digest of test_other" not in digests
    assert client.get("/telemetry/digests/2026-03-02/").status_code == 404


def test_a_session_from_one_tenant_is_worthless_on_another(two_tenants_with_data, client_for):
    tenant, other = two_tenants_with_data
    client = client_for(tenant)
    client.force_login(_user())
    for path in PAGES:
        response = client.get(path, HTTP_HOST=other.get_primary_domain().domain)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/telemetry/login/")


def test_dismissing_on_my_host_never_touches_another_tenants_group(two_tenants_with_data, client_for):
    tenant, other = two_tenants_with_data
    connection.set_tenant(other)
    theirs = GapGroup.objects.get()
    connection.set_tenant(tenant)
    client = client_for(tenant)
    client.force_login(_user())
    # Ids are per schema: the same number on my host means my own row (or none).
    client.post(f"/telemetry/gaps/{theirs.pk}/dismiss/")
    assert client.post(f"/telemetry/gaps/{theirs.pk + 1000}/dismiss/").status_code == 404
    connection.set_tenant(other)
    assert GapGroup.objects.get().status == "open"
    connection.set_tenant(tenant)


def test_staff_can_dismiss_and_reopen_a_group(tenant, tenant_client):
    group = _group("Do you have parking?")
    tenant_client.force_login(_user())
    response = tenant_client.post(f"/telemetry/gaps/{group.pk}/dismiss/", {"back": "open"})
    assert (response.status_code, response["Location"]) == (302, "/telemetry/gaps/?status=open")
    group.refresh_from_db()
    assert group.status == "dismissed" and group.status_changed_at is not None
    assert f'data-group="{group.pk}"' not in tenant_client.get("/telemetry/gaps/").content.decode()
    assert f'data-group="{group.pk}"' in tenant_client.get("/telemetry/gaps/?status=dismissed").content.decode()
    tenant_client.post(f"/telemetry/gaps/{group.pk}/reopen/")
    group.refresh_from_db()
    assert group.status == "open"


def test_a_non_staff_user_may_look_but_not_dismiss(tenant, tenant_client):
    group = _group("Is there wifi?")
    tenant_client.force_login(_user(staff=False))
    page = tenant_client.get("/telemetry/gaps/").content.decode()
    assert "Is there wifi?" in page and 'data-action="dismiss"' not in page
    assert tenant_client.post(f"/telemetry/gaps/{group.pk}/dismiss/").status_code == 403
    group.refresh_from_db()
    assert group.status == "open"


def test_dismiss_needs_a_post(tenant, tenant_client):
    group = _group("Can I bring my dog?")
    tenant_client.force_login(_user())
    assert tenant_client.get(f"/telemetry/gaps/{group.pk}/dismiss/").status_code == 405


def test_write_a_snippet_opens_the_admin_add_form_prefilled(tenant, tenant_client):
    group = _group("Do you have parking?")
    group.examples = ["Do you have parking?", "where can I park"]
    group.save()
    tenant_client.force_login(_user())
    html = tenant_client.get("/telemetry/gaps/").content.decode()
    assert ('href="/admin/knowledge/snippet/add/?key=do-you-have-parking&amp;title=Do+you+have+parking%3F'
            '&amp;body=%28Write+the+answer+here.%29%0A%0AKeywords%3A+Do+you+have+parking%3B+where+can+I+park"'
            in html)


def test_the_admin_add_form_shows_the_prefill(tenant, tenant_client):
    from telemetry.views import snippet_prefill_url

    group = _group("Do you have parking?")
    user = _user()
    user.is_superuser = True
    user.save()
    tenant_client.force_login(user)
    form = tenant_client.get(snippet_prefill_url(group)).context["adminform"].form
    assert form.initial["key"] == "do-you-have-parking"
    assert form.initial["title"] == "Do you have parking?"
    assert form.initial["body"] == "(Write the answer here.)\n\nKeywords: Do you have parking"


def test_telemetry_pages_do_not_exist_on_the_public_host(tenants, client_for, db):
    client = client_for("localhost")
    assert client.get("/telemetry/").status_code == 404


def test_the_dashboard_loads_chart_js_from_node_modules_not_a_cdn(tenant, tenant_client):
    tenant_client.force_login(_user())
    html = tenant_client.get("/telemetry/").content.decode()
    assert '<script src="/static/vendor/chart.js/dist/chart.umd.js"></script>' in html
    assert "cdn" not in html.lower() and "https://" not in html
    assert tenant_client.get("/static/vendor/chart.js/dist/chart.umd.js").status_code == 200


def test_the_dashboard_shows_each_figure_with_its_state(tenant, tenant_client):
    for i in range(10):
        retrieval_log_record(intent="other", retrieved_sections=[] if i < 2 else [{"key": "k", "tokens": 900}],
                             core_tokens=3000, embedding_latency_ms=250, retrieval_latency_ms=20)
    tenant_client.force_login(_user())
    html = tenant_client.get("/telemetry/").content.decode()
    assert 'data-metric="empty_rate" data-state="alert"' in html  # 20%
    assert 'data-metric="avg_retrieved_tokens" data-state="warn"' in html  # 720
    assert 'data-metric="trivial_rate" data-state="alert"' in html  # 0%
    assert 'data-metric="avg_embedding_ms" data-state="alert"' in html  # 250
    assert 'data-metric="avg_retrieval_ms" data-state="ok"' in html
    assert '<span class="tl-stat-value" data-testid="total-turns">10</span>' in html
