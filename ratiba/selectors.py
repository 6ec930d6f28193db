"""Platform reads."""
from dataclasses import dataclass

from django.db.models import QuerySet

from ratiba.models import ApiKey, KeyScope, Tenant


def tenant_list_public() -> QuerySet[Tenant]:
    """Businesses served here, without the platform's own public tenant."""
    return Tenant.objects.exclude(schema_name="public").prefetch_related("domains").order_by("name")


def tenant_get(*, schema: str) -> Tenant | None:
    return Tenant.objects.filter(schema_name=schema).first()


def api_key_list_chat(*, tenant: Tenant) -> list[ApiKey]:
    """A business's active chat keys (the only ones a web page may carry), newest first."""
    return list(ApiKey.objects.filter(tenant=tenant, scope=KeyScope.CHAT, revoked_at__isnull=True)
                .order_by("-created_at"))


@dataclass(frozen=True)
class TenantStatus:
    """The few numbers an owner wants on the home page."""

    live_snippets: int
    pending_embeddings: int
    awaiting_review: int
    retrieval_mode: str
    open_gaps: int


def tenant_status() -> TenantStatus:
    """Counts for the current tenant's home page (runs in the request's schema)."""
    from knowledge.models import SnippetVersion
    from knowledge.retrieval.config import effective_mode, retrieval_settings_get
    from knowledge.selectors import awaiting_release_count, snippet_pending_count
    from telemetry.selectors import gap_status_counts

    return TenantStatus(live_snippets=SnippetVersion.objects.filter(is_active=True).count(),
                        pending_embeddings=snippet_pending_count(), awaiting_review=awaiting_release_count(),
                        retrieval_mode=effective_mode(retrieval_settings_get()),
                        open_gaps=gap_status_counts().get("open", 0))
