"""Admin for collections: a collection page with drag-and-drop upload and live progress; documents with retry.

Every write goes through knowledge.collections.services; these classes collect input and show results.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from knowledge.collections import selectors, services
from knowledge.collections.errors import CollectionsError
from knowledge.collections.models import Chunk, Collection, Document, DocumentStatus
from ratiba.admin_scoping import TenantOnlyAdmin

POLL_STATUSES = (DocumentStatus.QUEUED, DocumentStatus.PROCESSING)


def document_row(document: Document) -> dict:
    """What the collection page shows (and polls) for one document."""
    return {
        "id": document.pk, "title": document.title, "filename": document.filename, "format": document.format,
        "size": document.size, "status": document.status, "error": document.error,
        "chunks_done": document.chunks_done, "chunks_total": document.chunks_total,
        "percent": document.progress_percent, "pages": document.page_count,
        "searchable": document.live_generation > 0,
        "updated": document.updated_at.isoformat() if document.updated_at else None,
        "change_url": reverse("admin:knowledge_document_change", args=[document.pk]),
        "retry_url": reverse("admin:knowledge_collection_retry", args=[document.collection_id, document.pk]),
        "can_retry": document.status == DocumentStatus.FAILED
        or (document.status != DocumentStatus.DONE and document.indexed_sha256 != document.sha256
            and document.status != DocumentStatus.PROCESSING),
    }


def progress_bar(document: Document) -> str:
    percent = document.progress_percent
    return format_html(
        '<div class="kc-progress" role="progressbar" aria-valuenow="{}" aria-valuemin="0" aria-valuemax="100" '
        'title="{} of {} chunks"><div class="kc-progress-bar kc-{}" style="width:{}%"></div></div>'
        '<span class="kc-progress-label">{}/{}</span>',
        percent, document.chunks_done, document.chunks_total, document.status, percent,
        document.chunks_done, document.chunks_total)


class CollectionForm(forms.ModelForm):
    class Meta:
        model = Collection
        fields = ["name", "scope", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def clean_name(self):
        name = self.cleaned_data["name"]
        if not services.NAME_RE.match(name or ""):
            raise forms.ValidationError("Use 1-100 letters, digits, hyphens or underscores.")
        return name


class CollectionAdmin(TenantOnlyAdmin):
    form = CollectionForm
    fields = ["name", "scope", "description"]
    change_form_template = "admin/knowledge/collections/collection_change_form.html"
    list_display = ["name", "scope", "description", "documents", "indexed", "created_at"]
    list_filter = ["scope"]
    search_fields = ["name", "description"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            document_total=Count("documents", distinct=True),
            document_indexed=Count("documents", filter=Q(documents__status=DocumentStatus.DONE), distinct=True))

    @admin.display(description="Documents", ordering="document_total")
    def documents(self, obj):
        return obj.document_total

    @admin.display(description="Indexed", ordering="document_indexed")
    def indexed(self, obj):
        return obj.document_indexed

    def get_readonly_fields(self, request, obj=None):
        # Sessions and API clients refer to a collection by name: it cannot be renamed.
        return ["name"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        if change:
            services.collection_update(collection=obj, scope=obj.scope, description=obj.description,
                                       user=request.user)
            return
        try:
            created = services.collection_create(name=obj.name, scope=obj.scope, description=obj.description,
                                                 user=request.user)
        except CollectionsError as exc:  # a race with another create; the form's unique check saw none
            raise PermissionDenied(exc.message) from exc
        obj.pk = created.pk
        obj.created_at, obj.updated_at = created.created_at, created.updated_at

    def delete_model(self, request, obj):
        services.collection_delete(collection=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for collection in queryset:
            services.collection_delete(collection=collection, user=request.user)

    def get_urls(self):
        own = [
            path("<int:collection_id>/upload/", self.admin_site.admin_view(self.upload_view),
                 name="knowledge_collection_upload"),
            path("<int:collection_id>/documents.json", self.admin_site.admin_view(self.documents_view),
                 name="knowledge_collection_documents"),
            path("<int:collection_id>/documents/<int:document_id>/retry/",
                 self.admin_site.admin_view(self.retry_view), name="knowledge_collection_retry"),
        ]
        return own + super().get_urls()

    def _collection(self, request, collection_id: int, *, write: bool) -> Collection:
        collection = get_object_or_404(Collection, pk=collection_id)
        if write:
            allowed = self.has_change_permission(request, collection)
        else:
            allowed = self.has_view_permission(request, collection)
        if not allowed:
            raise PermissionDenied
        return collection

    def upload_view(self, request, collection_id: int):
        """Store each posted file (field `files`, several allowed); answer per file in JSON."""
        if request.method != "POST":
            raise Http404
        collection = self._collection(request, collection_id, write=True)
        results = []
        for upload in request.FILES.getlist("files"):
            entry = {"filename": upload.name, "ok": False}
            try:
                if upload.size > services.max_document_bytes():
                    raise services.DocumentTooLarge(f"{upload.name!r} is {upload.size:,} bytes; the limit is "
                                                    f"{services.max_document_bytes():,} bytes.")
                result = services.document_upload(collection=collection, filename=upload.name, data=upload.read(),
                                                  content_type=upload.content_type or "", user=request.user)
            except CollectionsError as exc:
                entry["error"] = exc.message
            else:
                entry.update(ok=True, document_id=result.document.pk, created=result.created,
                             changed=result.changed, queued=result.queued)
            results.append(entry)
        if "application/json" in request.headers.get("Accept", ""):
            if not results:
                return JsonResponse({"results": [], "error": "Choose or drop at least one file."}, status=400)
            return JsonResponse({"results": results})
        # The plain form (no JavaScript): say what happened on the collection page.
        if not results:
            messages.warning(request, "Choose at least one file to upload.")
        for entry in results:
            if entry["ok"]:
                messages.success(request, f"“{entry['filename']}” uploaded.")
            else:
                messages.error(request, entry["error"])
        return HttpResponseRedirect(reverse("admin:knowledge_collection_change", args=[collection.pk]))

    def documents_view(self, request, collection_id: int):
        collection = self._collection(request, collection_id, write=False)
        rows = [document_row(document) for document in selectors.document_list(collection=collection)]
        return JsonResponse({"documents": rows, "busy": any(row["status"] in POLL_STATUSES for row in rows)})

    def retry_view(self, request, collection_id: int, document_id: int):
        if request.method != "POST":
            raise Http404
        collection = self._collection(request, collection_id, write=True)
        document = selectors.document_get(collection=collection, document_id=document_id)
        if document is None:
            raise Http404
        try:
            services.document_retry(document=document)
        except CollectionsError as exc:
            messages.warning(request, exc.message)
        else:
            messages.success(request, f"“{document.filename}” is queued for indexing again.")
        return HttpResponseRedirect(reverse("admin:knowledge_collection_change", args=[collection.pk]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = extra_context or {}
        collection = Collection.objects.filter(pk=object_id).first() if str(object_id).isdigit() else None
        if collection is not None:
            documents = list(selectors.document_list(collection=collection))
            extra_context.update(
                collection_documents=[document_row(document) for document in documents],
                collection_busy=any(document.status in POLL_STATUSES for document in documents),
                upload_url=reverse("admin:knowledge_collection_upload", args=[collection.pk]),
                documents_url=reverse("admin:knowledge_collection_documents", args=[collection.pk]),
                max_upload_bytes=services.max_document_bytes(),
            )
        return super().change_view(request, object_id, form_url, extra_context)


class DocumentAdmin(TenantOnlyAdmin):
    list_display = ["title", "collection", "filename", "status", "progress", "pages", "updated_at"]
    list_filter = ["status", "collection", "format"]
    search_fields = ["title", "filename"]
    list_select_related = ["collection"]
    actions = ["retry_selected"]
    readonly_fields = ["collection", "title", "filename", "format", "content_type", "size", "sha256", "status",
                       "error", "progress", "page_count", "live_generation", "attempts", "created_at", "updated_at",
                       "indexed_at", "chunk_preview"]
    fields = readonly_fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("content")

    def has_add_permission(self, request, *args):
        return False  # documents are added by uploading them on their collection's page

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="Progress")
    def progress(self, obj):
        return progress_bar(obj)

    @admin.display(description="Pages", ordering="page_count")
    def pages(self, obj):
        return obj.page_count or "—"

    @admin.display(description="Chunks (live)")
    def chunk_preview(self, obj):
        chunks = (Chunk.objects.filter(document=obj, is_live=True).order_by("ordinal")
                  .only("ordinal", "heading_path", "page", "token_count", "text")[:100])
        if not chunks:
            return "No live chunks yet."
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((chunk.ordinal, chunk.heading_path or "—", chunk.page or "—", chunk.token_count,
              chunk.text[:240] + ("…" if len(chunk.text) > 240 else "")) for chunk in chunks))
        return format_html('<table class="kc-chunks"><thead><tr><th>#</th><th>Headings</th><th>Page</th>'
                           '<th>Tokens</th><th>Text</th></tr></thead><tbody>{}</tbody></table>', rows)

    def delete_model(self, request, obj):
        services.document_delete(document=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for document in queryset.select_related("collection"):
            services.document_delete(document=document, user=request.user)

    @admin.action(description="Retry indexing of the selected documents")
    def retry_selected(self, request, queryset):
        retried, skipped = 0, 0
        for document in queryset:
            try:
                services.document_retry(document=document)
                retried += 1
            except CollectionsError:
                skipped += 1
        level = messages.SUCCESS if retried else messages.WARNING
        self.message_user(request, f"Queued {retried} document(s) again; {skipped} already indexed.", level)


admin.site.register(Collection, CollectionAdmin)
admin.site.register(Document, DocumentAdmin)
