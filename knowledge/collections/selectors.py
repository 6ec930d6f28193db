"""Collection and document reads (the API and the admin share these)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from knowledge.collections.models import Collection, CollectionScope, Document


def collection_list() -> QuerySet[Collection]:
    return Collection.objects.order_by("name")


def collection_get(*, name: str) -> Collection | None:
    return Collection.objects.filter(name=name).first()


def document_list(*, collection: Collection) -> QuerySet[Document]:
    """A collection's documents without their bytes."""
    return Document.objects.filter(collection=collection).defer("content").order_by("filename", "id")


def document_get(*, collection: Collection, document_id: int) -> Document | None:
    return document_list(collection=collection).filter(pk=document_id).first()


def session_collection_names(session) -> list[str]:
    """The collection names a chat session has added (ADD_KB), whatever the session object calls them."""
    if session is None:
        return []
    for attribute in ("collections", "active_collections", "collection_names"):
        value = getattr(session, attribute, None)
        if value is None:
            continue
        if isinstance(value, str):
            return [value]
        if hasattr(value, "values_list"):  # a related manager of Collection rows
            return list(value.values_list("name", flat=True))
        return [str(item) for item in value]
    return []


def searchable_collection_ids(*, names: Iterable[str] | None = None, session=None) -> list[int]:
    """Collections a search may read: every tenant-scope one, plus the session-scope ones the session
    added; narrowed to `names` when a filter names collections (an empty filter means none)."""
    active = set(session_collection_names(session))
    rows = Collection.objects.values_list("id", "name", "scope")
    allowed = {name: pk for pk, name, scope in rows if scope == CollectionScope.TENANT or name in active}
    if names is not None:
        wanted = set(names)
        allowed = {name: pk for name, pk in allowed.items() if name in wanted}
    return sorted(allowed.values())
