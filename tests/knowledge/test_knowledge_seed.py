"""The seed file format: idempotent apply, new versions on change, deactivation, clear errors, round trip."""
from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db import connection
from django_tenants.utils import schema_context

from knowledge.models import (
    EmbeddingState,
    OpeningHours,
    Service,
    SmokeTest,
    Snippet,
    SnippetVersion,
    SpecialDay,
)
from knowledge.seed import SeedError, seed_apply, seed_export, seed_parse
from knowledge.services import CONTENT_FIELDS
from ratiba.models import Tenant
from ratiba.services import tenant_delete

# The development tenant's seed file, kept with the tests so a checkout is self-contained.
ARIA = Path(__file__).resolve().parent / "data" / "aria_spa.yaml"

SMALL = """\
tenant: {schema: test_tenant, name: Test Spa, domain: tenant.test.localhost, timezone: Africa/Nairobi}
services:
  - {name: "Haircut", description: "Wash and cut.", duration_minutes: 30, price: "800.00", currency: KES}
  - {name: "Beard trim", duration_minutes: 15, price: 300, currency: kes}
hours:
  weekly: {mon: ["09:00-13:00", "14:00-18:00"], sat: ["10:00-16:00"]}
  special:
    - {date: 2026-12-25, hours: [], note: "Christmas Day, closed"}
snippets:
  - key: parking
    category: facility
    role: retrieved
    title: "Parking"
    body: |
      Free parking behind the building.
    related: [arrive_early]
  - key: arrive_early
    category: prep
    role: retrieved
    title: "Arrive early"
    body: "Please arrive 10 minutes early."
    tags: [Arrival]
  - key: guardrail_medical
    category: policy
    role: guardrail
    title: "No medical advice"
    body: "Never give medical advice."
smoke_tests:
  - {query: "Is there parking?", expect: [parking]}
"""


def _problems(text: str) -> list[str]:
    with pytest.raises(SeedError) as caught:
        seed_parse(text=text, source="f.yaml")
    return [str(problem) for problem in caught.value.problems]


@pytest.fixture
def seeded(tenant):
    report = seed_apply(seed=seed_parse(text=SMALL))
    return report


def test_it_creates_versions_facts_and_smoke_tests(seeded, fake_embedder):
    assert seeded.versions_created == ["parking v1", "arrive_early v1", "guardrail_medical v1"]
    active = SnippetVersion.objects.filter(is_active=True)
    assert sorted(active.values_list("key", flat=True)) == ["arrive_early", "guardrail_medical", "parking"]
    assert SnippetVersion.objects.get(key="arrive_early").tags == ["arrival"]
    assert SnippetVersion.objects.get(key="parking").related_keys == ["arrive_early"]
    assert list(Service.objects.values_list("name", "price", "currency", "position")) == [
        ("Haircut", Decimal("800.00"), "KES", 1), ("Beard trim", Decimal("300.00"), "KES", 2)]
    assert [str(row) for row in OpeningHours.objects.all()] == [
        "Monday 09:00-13:00", "Monday 14:00-18:00", "Saturday 10:00-16:00"]
    christmas = SpecialDay.objects.get(date=dt.date(2026, 12, 25))
    assert (christmas.note, christmas.ranges.count()) == ("Christmas Day, closed", 0)
    assert list(SmokeTest.objects.values_list("query", "expected_keys")) == [("Is there parking?", ["parking"])]
    # Embedded in one batch after the write (full text and title of each), not one call per version.
    assert fake_embedder.calls == [6]
    assert seeded.embedded == 3
    assert set(SnippetVersion.objects.values_list("embedding_state", flat=True)) == {EmbeddingState.DONE}


def test_a_second_run_changes_nothing(seeded, fake_embedder):
    stamps = list(SnippetVersion.objects.order_by("pk").values_list("pk", "updated_at"))
    again = seed_apply(seed=seed_parse(text=SMALL))
    assert again.changed is False
    assert again.unchanged == 3 and again.embedded == 0
    assert list(SnippetVersion.objects.order_by("pk").values_list("pk", "updated_at")) == stamps


def test_a_changed_tenant_block_updates_the_business_profile_through_its_service(tenant, monkeypatch):
    from knowledge.seed import seed_tenant_ensure
    from ratiba import services

    calls = []
    real = services.tenant_profile_update
    monkeypatch.setattr(services, "tenant_profile_update", lambda **kw: calls.append(kw) or real(**kw))
    spec = seed_parse(text=SMALL.replace("name: Test Spa", "name: Test Spa & Salon")).tenant
    target, created = seed_tenant_ensure(spec=spec)
    target.refresh_from_db()
    assert created is False and len(calls) == 1
    assert (target.name, target.timezone) == ("Test Spa & Salon", "Africa/Nairobi")


def test_a_changed_body_becomes_a_new_active_version(seeded):
    changed = SMALL.replace("Free parking behind the building.", "Paid parking: KES 100 an hour.")
    report = seed_apply(seed=seed_parse(text=changed))
    assert report.versions_created == ["parking v2"]
    assert list(SnippetVersion.objects.filter(key="parking").values_list("version", "is_active")) == [
        (2, True), (1, False)]


def test_a_removed_snippet_is_deactivated_not_deleted(seeded):
    without = SMALL.replace("    related: [arrive_early]\n", "")
    without = without[:without.index("  - key: arrive_early")] + without[without.index("  - key: guardrail_medical"):]
    report = seed_apply(seed=seed_parse(text=without))
    assert report.deactivated == ["arrive_early"]
    assert SnippetVersion.objects.filter(key="arrive_early").count() == 1
    assert not SnippetVersion.objects.filter(key="arrive_early", is_active=True).exists()
    back = seed_apply(seed=seed_parse(text=SMALL))
    assert back.reactivated == ["arrive_early v1"]
    # parking lost its related key and got it back: content moves forward as v3 (history stays linear).
    assert back.versions_created == ["parking v3"]


def test_removed_services_special_days_and_smoke_tests_follow_the_file(seeded):
    text = SMALL.replace('  - {name: "Beard trim", duration_minutes: 15, price: 300, currency: kes}\n', "")
    text = text.replace('    - {date: 2026-12-25, hours: [], note: "Christmas Day, closed"}\n',
                        '    - {date: 2026-12-24, hours: ["09:00-12:00"], note: "Christmas Eve"}\n')
    text = text.replace('  - {query: "Is there parking?", expect: [parking]}\n',
                        '  - {query: "Where do I park?", expect: [parking]}\n')
    report = seed_apply(seed=seed_parse(text=text))
    assert report.services_deactivated == 1
    assert Service.objects.get(name="Beard trim").is_active is False
    assert list(SpecialDay.objects.values_list("date", flat=True)) == [dt.date(2026, 12, 24)]
    assert list(SmokeTest.objects.values_list("query", flat=True)) == ["Where do I park?"]


def test_errors_name_the_line_and_field():
    bad = SMALL.replace("category: prep", "category: prepp")
    assert _problems(bad) == [
        "line 18: snippets[1].category: Unknown category 'prepp': expected one of policy, facility, prep, "
        "service, hours, general."]


def test_duplicate_keys_are_reported_with_both_places():
    dup = SMALL.replace("key: arrive_early", "key: parking")
    problems = _problems(dup)
    assert "line 17: snippets[1].key: Duplicate key 'parking' (first at snippets[0], line 10)." in problems


def test_dangling_related_keys_and_smoke_test_keys_are_errors():
    text = SMALL.replace("related: [arrive_early]", "related: [valet]").replace("expect: [parking]", "expect: [nope]")
    assert _problems(text) == [
        "line 16: snippets[0].related: Related key(s) not defined in this file: valet.",
        "line 29: smoke_tests[0].expect: Key(s) not defined in this file: nope."]


def test_unknown_fields_bad_hours_and_currency_are_reported_together():
    text = (SMALL.replace('currency: KES}', 'currency: XYZ}', 1).replace('"14:00-18:00"', '"12:30-18:00"')
            .replace('    title: "Arrive early"', '    titel: "Arrive early"'))
    assert _problems(text) == [
        "line 3: services[0].currency: Unknown currency 'XYZ': use an ISO 4217 code such as KES.",
        "line 6: hours.weekly.mon: 09:00-13:00 overlaps 12:30-18:00.",
        "line 17: snippets[1].title: This field is required.",
        "line 20: snippets[1].titel: Unknown field 'titel' (allowed: key, category, role, title, body, language, "
        "channels, tags, status, related, notes, valid_from, valid_until, last_reviewed_at, translations).",
    ]


def test_a_bare_number_among_tags_is_kept_as_its_text(tenant):
    seed = seed_parse(text=SMALL.replace("tags: [Arrival]", "tags: [Arrival, 360, 2026]"))
    seed_apply(seed=seed)
    assert SnippetVersion.objects.get(key="arrive_early", is_active=True).tags == ["arrival", "360", "2026"]
    assert _problems(SMALL.replace("tags: [Arrival]", "tags: [Arrival, [360]]")) == [
        "line 22: snippets[1].tags: Every item must be a non-empty string, not [360]."]


def test_malformed_yaml_reports_its_line():
    problems = _problems("snippets:\n  - key: a\n    body: [unclosed\n")
    assert len(problems) == 1 and problems[0].startswith("line 4: Invalid YAML")


def test_yaml_aliases_are_refused():
    bomb = 'a: &a ["x","x"]\nb: &b [*a,*a]\nc: [*b,*b]\n'
    assert _problems(bomb) == ["line 2: YAML aliases (*name) are not allowed in seed files."]


def test_duplicate_fields_in_one_mapping_are_refused():
    text = SMALL.replace('    title: "Parking"\n', '    title: "Parking"\n    title: "Parking 2"\n')
    assert _problems(text) == ["line 14: Duplicate field 'title' in one mapping."]


def test_huge_files_are_refused(settings):
    from knowledge import seed

    huge = "snippets: []\n" + "#" * (seed.MAX_SEED_BYTES + 1)
    assert _problems(huge)[0].startswith("File is larger than")


def test_nothing_is_written_when_a_later_write_fails(tenant, monkeypatch):
    from knowledge import seed as seed_module

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(seed_module, "_apply_smoke_tests", explode)
    with pytest.raises(RuntimeError):
        seed_apply(seed=seed_parse(text=SMALL))
    assert (Snippet.objects.count(), Service.objects.count(), OpeningHours.objects.count()) == (0, 0, 0)


def test_the_seed_format_round_trips(tenant):
    original = seed_parse(text=ARIA.read_bytes())
    seed_apply(seed=original, embed=False)
    exported = seed_parse(text=seed_export(tenant=tenant))
    assert [s.key for s in exported.snippets] == [s.key for s in original.snippets]
    assert [s.content for s in exported.snippets] == [s.content for s in original.snippets]
    assert exported.services == original.services
    assert exported.hours == original.hours
    assert exported.smoke_tests == original.smoke_tests
    assert exported.tenant.schema == "test_tenant"
    # Applying the export creates nothing new.
    assert seed_apply(seed=exported, embed=False).changed is False


def test_the_command_seeds_then_reports_no_change(tenant):
    out = io.StringIO()
    call_command("seed_knowledge", str(ARIA), "--tenant", "test_tenant", "--skip-embeddings", stdout=out)
    assert "50 new version(s)" in out.getvalue()
    out = io.StringIO()
    call_command("seed_knowledge", str(ARIA), "--tenant", "test_tenant", "--skip-embeddings", stdout=out)
    assert "0 new version(s), 0 reactivated, 0 deactivated, 50 unchanged" in out.getvalue()
    connection.set_schema("test_tenant")
    assert SnippetVersion.objects.count() == 50
    assert SnippetVersion.objects.filter(is_active=True, role="guardrail").count() == 3


def test_the_command_exits_non_zero_with_every_problem(tenant, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL.replace("role: guardrail", "role: guard").replace("category: prep", "category: x"))
    with pytest.raises(CommandError) as caught:
        call_command("seed_knowledge", str(bad), "--tenant", "test_tenant")
    message = str(caught.value)
    assert "2 problem(s)" in message
    assert f"{bad}:18: snippets[1].category: Unknown category 'x'" in message
    assert f"{bad}:25: snippets[2].role: Unknown role 'guard'" in message


def test_export_command_writes_the_file(tenant, tmp_path):
    seed_apply(seed=seed_parse(text=SMALL), embed=False)
    target = tmp_path / "out.yaml"
    call_command("export_knowledge", "--tenant", "test_tenant", str(target))
    data = yaml.safe_load(target.read_text())
    assert [item["key"] for item in data["snippets"]] == ["parking", "arrive_early", "guardrail_medical"]
    assert data["hours"]["weekly"]["mon"] == ["09:00-13:00", "14:00-18:00"]
    assert data["services"][1] == {"name": "Beard trim", "description": "", "duration_minutes": 15,
                                   "price": "300.00", "currency": "KES"}


def test_the_command_creates_the_tenant_from_the_file(tenants, django_db_blocker, tmp_path):
    text = SMALL.replace("schema: test_tenant", "schema: seeded_new").replace("tenant.test.localhost",
                                                                                "seeded-new.test.localhost")
    source = tmp_path / "new.yaml"
    source.write_text(text)
    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        leftover = Tenant.objects.filter(schema_name="seeded_new").first()
        if leftover:
            tenant_delete(tenant=leftover)
        try:
            call_command("seed_knowledge", str(source), "--skip-embeddings", stdout=io.StringIO())
            created = Tenant.objects.get(schema_name="seeded_new")
            assert (created.name, created.timezone, created.get_primary_domain().domain) == (
                "Test Spa", "Africa/Nairobi", "seeded-new.test.localhost")
            with schema_context("seeded_new"):
                assert SnippetVersion.objects.filter(is_active=True).count() == 3
        finally:
            connection.set_schema_to_public()
            leftover = Tenant.objects.filter(schema_name="seeded_new").first()
            if leftover:
                tenant_delete(tenant=leftover)


def test_seed_content_fields_cover_every_version_field():
    from knowledge.seed import SNIPPET_FIELD_MAP, SNIPPET_FIELDS

    assert set(CONTENT_FIELDS) == {SNIPPET_FIELD_MAP.get(n, n) for n in SNIPPET_FIELDS if n != "key"}


def test_the_demo_business_file_is_valid_and_complete():
    demo = Path(__file__).resolve().parents[2] / "demo" / "demo_business.yaml"
    seed = seed_parse(text=demo.read_bytes(), source=str(demo))
    roles = [s.content["role"] for s in seed.snippets]
    assert (seed.tenant.schema, seed.tenant.domain) == ("demo", "demo.localhost")
    assert (roles.count("guardrail"), roles.count("behaviour")) == (2, 2)
    assert [s.key for s in seed.snippets if s.content["status"] == "draft"] == ["draft_home_visits"]
    assert sum(s.content["language"] == "sw" for s in seed.snippets) >= 2
    assert len(seed.services) == 12 and len(seed.smoke_tests) >= 5


def test_demo_setup_seeds_the_demo_business_and_its_owner(tenants, django_db_blocker):
    from django.contrib.auth import get_user_model

    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        leftover = Tenant.objects.filter(schema_name="demo").first()
        if leftover:
            tenant_delete(tenant=leftover)
        try:
            out = io.StringIO()
            call_command("demo_setup", stdout=out, stderr=io.StringIO())
            assert "user: owner" in out.getvalue()
            assert Tenant.objects.get(schema_name="demo").get_primary_domain().domain == "demo.localhost"
            with schema_context("demo"):
                assert SnippetVersion.objects.filter(is_active=True).count() == 21
                assert SnippetVersion.objects.filter(embedding_state=EmbeddingState.DONE).count() == 21
                assert get_user_model().objects.get(username="owner").is_superuser
            again = io.StringIO()
            call_command("demo_setup", stdout=again, stderr=io.StringIO())
            assert "0 new version(s), 0 reactivated, 0 deactivated, 21 unchanged" in again.getvalue()
        finally:
            connection.set_schema_to_public()
            leftover = Tenant.objects.filter(schema_name="demo").first()
            if leftover:
                tenant_delete(tenant=leftover)
