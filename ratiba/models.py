"""Platform models in the public schema: businesses, their hosts and their API keys."""
from django.db import models
from django_tenants.models import DomainMixin, TenantMixin


class Tenant(TenantMixin):
    """A business: one PostgreSQL schema of its own."""

    name = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    languages = models.JSONField(default=list, blank=True)
    currency = models.CharField(max_length=3, default="KES")
    personality = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    auto_create_schema = True
    auto_drop_schema = True

    class Meta:
        ordering = ["schema_name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.schema_name})"


class Domain(DomainMixin):
    """A host name routed to a tenant (for example spa.localhost)."""


class KeyScope(models.TextChoices):
    # A chat key is publishable (a website widget shows it in its page source): it can only send chat turns.
    CHAT = "chat", "Chat only (publishable: website widget)"
    FULL = "full", "Full (every API: authoring, documents, telemetry)"


class ApiKey(models.Model):
    """A tenant's REST key: only a prefix and a SHA-256 digest are stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    label = models.CharField(max_length=100, blank=True)
    # Fixed when issued: widening a key already published in a web page would hand every visitor full access.
    scope = models.CharField(max_length=8, choices=KeyScope.choices, default=KeyScope.FULL)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.label or 'unlabelled'})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class TenantHealthSnapshot(models.Model):
    """A tenant's retrieval health for the platform overview, aggregated inside its schema by a beat task.

    Kept in the public schema so the overview never queries tenant schemas itself; one row per tenant per day.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="health_snapshots")
    day = models.DateField()
    taken_at = models.DateTimeField()
    window_days = models.PositiveSmallIntegerField(default=7)
    turns = models.PositiveIntegerField(default=0)
    turns_today = models.PositiveIntegerField(default=0)
    refusals = models.PositiveIntegerField(default=0)
    refusal_rate = models.FloatField(null=True, blank=True)
    empty_rate = models.FloatField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    state = models.CharField(max_length=10, default="no_data")
    alerts = models.JSONField(default=list, blank=True)  # [{metric, label, value, state}] in warn or alert
    open_gap_groups = models.PositiveIntegerField(default=0)
    current_mode = models.CharField(max_length=10, blank=True)

    class Meta:
        ordering = ["tenant__name", "-day"]
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="health_snapshot_tenant_day")]

    def __str__(self) -> str:
        return f"{self.tenant.schema_name} {self.day} {self.state}"
