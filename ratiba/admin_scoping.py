"""Admin classes that show a model only where its table lives: the public schema or a tenant's."""
from django.contrib import admin
from django.db import connection


def on_public_schema() -> bool:
    return connection.schema_name == "public"


class _ScopedAdmin(admin.ModelAdmin):
    def _in_scope(self) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def has_module_permission(self, request):
        return self._in_scope() and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._in_scope() and super().has_view_permission(request, obj)

    def has_add_permission(self, request, *args):
        return self._in_scope() and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return self._in_scope() and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._in_scope() and super().has_delete_permission(request, obj)


class PublicOnlyAdmin(_ScopedAdmin):
    """Platform objects, administered from the public host only."""

    def _in_scope(self) -> bool:
        return on_public_schema()


class TenantOnlyAdmin(_ScopedAdmin):
    """A business's own objects, administered from its own host only."""

    def _in_scope(self) -> bool:
        return not on_public_schema()
