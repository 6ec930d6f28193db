"""Owner onboarding: `add_tenant --owner-email` creates the owner's login in the business's own schema and prints a
one-time set-password link as its last line; the admin login offers a password reset by e-mail."""
from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.db import connection
from django_tenants.utils import schema_context

from tests.support.live import CHROMIUM, CHROMIUM_ARGS, serve

EMAIL = "amina@example.com"
LINK = re.compile(r"^http://tenant\.test\.localhost:(\d+)/admin/reset/([\w-]+)/([\w-]+)/$")


def _add_owner(email: str = "Amina@Example.com") -> list[str]:
    out = io.StringIO()
    call_command("add_tenant", "test_tenant", "--name", "Test Spa", "--domain", "tenant.test.localhost",
                 "--owner-email", email, stdout=out)
    return out.getvalue().strip().splitlines()


def test_the_owner_login_is_created_in_the_business_schema_only_with_a_link_as_the_last_line(tenant):
    lines = _add_owner()
    assert lines[0] == "Already exists: tenant test_tenant (Test Spa) at tenant.test.localhost"
    assert lines[1] == f"Created owner login {EMAIL}. Send them this link to set a password (it works once):"
    assert LINK.match(lines[-1]) and LINK.match(lines[-1]).group(1) == "8000"
    connection.set_tenant(tenant)
    owner = get_user_model().objects.get(email=EMAIL)
    assert (owner.username, owner.is_staff, owner.is_superuser) == (EMAIL, True, True)
    assert not get_user_model().objects.filter(email=EMAIL, last_login__isnull=False).exists()
    for schema in ("public", "test_other"):
        with schema_context(schema):
            assert not get_user_model().objects.filter(email=EMAIL).exists()


def test_re_running_finds_the_same_login_and_prints_a_fresh_link(tenant):
    first = _add_owner()[-1]
    again = _add_owner("amina@example.com")
    connection.set_tenant(tenant)
    assert again[1].startswith(f"Found owner login {EMAIL}.") and LINK.match(again[-1])
    assert get_user_model().objects.filter(email=EMAIL).count() == 1
    assert LINK.match(first).group(2) == LINK.match(again[-1]).group(2)  # the same user


@pytest.mark.parametrize("email", ["not-an-address", "a@b"])
def test_a_bad_owner_address_is_refused(tenant, email):
    with pytest.raises(CommandError, match="not a valid e-mail address"):
        _add_owner(email)


def test_the_link_sets_a_password_once(tenant, client_for):
    link = _add_owner()[-1]
    connection.set_tenant(tenant)
    client = client_for(tenant)
    path = link.split(":8000", 1)[1]
    form = client.get(path, follow=True)
    assert form.status_code == 200 and 'name="new_password1"' in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a long-enough pass phrase 7",
                                                    "new_password2": "a long-enough pass phrase 7"})
    assert done.status_code == 302 and done["Location"] == "/admin/reset/done/"
    assert client.login(username=EMAIL, password="a long-enough pass phrase 7")
    reused = client_for(tenant).get(path, follow=True).content.decode()
    assert 'name="new_password1"' not in reused and "invalid" in reused.lower()


def test_the_admin_login_offers_a_password_reset_by_email_to_this_business_only(tenant, other_tenant, client_for):
    _add_owner()
    connection.set_tenant(tenant)
    login = client_for(tenant).get("/admin/login/").content.decode()
    assert 'href="/admin/password_reset/"' in login
    response = client_for(tenant).post("/admin/password_reset/", {"email": EMAIL})
    assert response.status_code == 302 and response["Location"] == "/admin/password_reset/done/"
    assert [m.to for m in mail.outbox] == [[EMAIL]]
    assert "http://tenant.test.localhost/admin/reset/" in mail.outbox[0].body
    # The other business has no such user: nothing is sent (and the page does not say so).
    assert client_for(other_tenant).post("/admin/password_reset/", {"email": EMAIL}).status_code == 302
    assert len(mail.outbox) == 1


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Debian's chromium")
def test_in_chromium_the_owner_link_sets_a_password_and_the_owner_signs_in(committed, settings):
    from playwright.sync_api import expect, sync_playwright

    User = get_user_model()
    User.objects.filter(email=EMAIL).delete()
    shots = Path("/tmp/shots")
    shots.mkdir(exist_ok=True)
    try:
        with serve() as port:
            # Database work before Playwright: its sync API runs an event loop, where Django refuses queries.
            settings.TENANT_LINK_BASE = f"http://{{domain}}:{port}"
            link = _add_owner()[-1]
            connection.set_tenant(committed)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                page.goto(link)
                expect(page.locator("#id_new_password1")).to_be_visible(timeout=20_000)
                page.fill("#id_new_password1", "a long-enough pass phrase 7")
                page.fill("#id_new_password2", "a long-enough pass phrase 7")
                page.screenshot(path=str(shots / "onboarding-set-password.png"), full_page=True)
                page.click("input[type=submit]")
                expect(page.locator("#content")).to_contain_text("Your password has been set", timeout=20_000)
                page.goto(f"http://tenant.test.localhost:{port}/admin/login/")
                expect(page.get_by_role("link", name="Forgotten your login credentials?")).to_be_visible()
                page.fill("#id_username", EMAIL)
                page.fill("#id_password", "a long-enough pass phrase 7")
                page.click("input[type=submit]")
                expect(page.locator("#user-tools")).to_contain_text(EMAIL.upper(), ignore_case=True,
                                                                    timeout=20_000)
                page.screenshot(path=str(shots / "onboarding-signed-in.png"), full_page=True)
                page.goto(link)  # the same link a second time
                expect(page.locator("#content")).to_contain_text("invalid", timeout=20_000)
                page.screenshot(path=str(shots / "onboarding-link-used.png"), full_page=True)
                browser.close()
    finally:
        connection.set_tenant(committed)
        User.objects.filter(email=EMAIL).delete()
