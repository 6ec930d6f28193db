"""REST API for collections and their documents (thin: validation in serializers, work in services)."""
from __future__ import annotations

from django.db.models import Count, Q
from drf_spectacular.utils import (OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field,
                                   inline_serializer)
from rest_framework import exceptions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge.audit import request_actor
from knowledge.collections import selectors, services
from knowledge.collections.errors import CollectionsError, DocumentTooLarge
from knowledge.collections.models import CollectionScope, Document, DocumentStatus
from ratiba.parsers import JSONParser


class CollectionOutput(serializers.Serializer):
    name = serializers.CharField()
    scope = serializers.ChoiceField(choices=CollectionScope.choices)
    description = serializers.CharField()
    document_count = serializers.IntegerField()
    documents_indexed = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ProgressOutput(serializers.Serializer):
    chunks_done = serializers.IntegerField()
    chunks_total = serializers.IntegerField()
    percent = serializers.IntegerField(source="progress_percent")


class DocumentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    collection = serializers.CharField(source="collection.name")
    title = serializers.CharField()
    filename = serializers.CharField()
    content_type = serializers.CharField()
    format = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    status = serializers.ChoiceField(choices=DocumentStatus.choices)
    error = serializers.CharField()
    page_count = serializers.IntegerField(allow_null=True)
    progress = serializers.SerializerMethodField()
    searchable = serializers.SerializerMethodField(help_text="Whether some version of the document is live in search.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    indexed_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(ProgressOutput)
    def get_progress(self, document: Document) -> dict:
        return ProgressOutput(document).data

    @extend_schema_field(serializers.BooleanField())
    def get_searchable(self, document: Document) -> bool:
        return document.live_generation > 0


def _collections_with_counts():
    return selectors.collection_list().annotate(
        document_count=Count("documents", distinct=True),
        documents_indexed=Count("documents", filter=Q(documents__live_generation__gt=0), distinct=True),
    )


def _paginated(name: str, item: serializers.Serializer) -> serializers.Serializer:
    return inline_serializer(name, {"count": serializers.IntegerField(),
                                    "next": serializers.URLField(allow_null=True),
                                    "previous": serializers.URLField(allow_null=True), "results": item})


class CollectionInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=CollectionScope.choices, default=CollectionScope.TENANT)
    description = serializers.CharField(required=False, allow_blank=True, default="")


class CollectionListApi(APIView):
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(tags=["collections"], operation_id="collections_list",
                   responses=_paginated("PaginatedCollectionList", CollectionOutput(many=True)),
                   parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)])
    def get(self, request):
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(_collections_with_counts(), request, view=self)
        return paginator.get_paginated_response(CollectionOutput(page, many=True).data)

    @extend_schema(tags=["collections"], operation_id="collections_create", request=CollectionInput,
                   responses={201: CollectionOutput, 409: OpenApiResponse(description="Name taken")})
    def post(self, request):
        serializer = CollectionInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        collection = services.collection_create(**serializer.validated_data, actor=request_actor(request))
        return Response(CollectionOutput(_collections_with_counts().get(pk=collection.pk)).data,
                        status=status.HTTP_201_CREATED)


class CollectionDetailApi(APIView):
    @extend_schema(tags=["collections"], operation_id="collections_retrieve", responses=CollectionOutput)
    def get(self, request, name: str):
        collection = _collections_with_counts().filter(name=name).first()
        if collection is None:
            raise exceptions.NotFound(f"No collection named {name!r}.")
        return Response(CollectionOutput(collection).data)

    @extend_schema(tags=["collections"], operation_id="collections_destroy", responses={204: None})
    def delete(self, request, name: str):
        collection = selectors.collection_get(name=name)
        if collection is None:
            raise exceptions.NotFound(f"No collection named {name!r}.")
        services.collection_delete(collection=collection, actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _document_fresh(document_id: int) -> Document:
    # Re-read: with eager Celery the ingestion has already run by the time the upload returns.
    return Document.objects.defer("content").select_related("collection").get(pk=document_id)


class DocumentListApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(tags=["collections"], operation_id="collection_documents_list",
                   responses=_paginated("PaginatedDocumentList", DocumentOutput(many=True)),
                   parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)])
    def get(self, request, name: str):
        collection = selectors.collection_get(name=name)
        if collection is None:
            raise exceptions.NotFound(f"No collection named {name!r}.")
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.document_list(collection=collection).select_related("collection"),
                                           request, view=self)
        return paginator.get_paginated_response(DocumentOutput(page, many=True).data)

    @extend_schema(
        tags=["collections"], operation_id="collection_documents_upload",
        request={"multipart/form-data": inline_serializer("DocumentUpload", {"file": serializers.FileField()})},
        responses={201: DocumentOutput, 200: DocumentOutput,
                   413: OpenApiResponse(description="File larger than DOCUMENT_MAX_BYTES"),
                   415: OpenApiResponse(description="Not Markdown, text, HTML or PDF")},
        description="Upload a file (field `file`). The same bytes again return the existing document (200); "
                    "a changed file under an existing name replaces that document's content (200, re-indexed); "
                    "a new file is created (201). Ingestion runs in the background: poll the document for progress.",
    )
    def post(self, request, name: str):
        collection = selectors.collection_get(name=name)
        if collection is None:
            raise exceptions.NotFound(f"No collection named {name!r}.")
        upload = request.FILES.get("file")
        if upload is None:
            raise CollectionsError("Upload the document as multipart field `file`.",
                                   fields={"file": ["This field is required."]})
        if upload.size is not None and upload.size > services.max_document_bytes():
            raise DocumentTooLarge(
                f"{upload.name!r} is {upload.size:,} bytes; the limit is {services.max_document_bytes():,} bytes.")
        result = services.document_upload(collection=collection, filename=upload.name, data=upload.read(),
                                          content_type=upload.content_type or "", actor=request_actor(request))
        body = DocumentOutput(_document_fresh(result.document.pk)).data
        body["upload"] = {"created": result.created, "changed": result.changed, "queued": result.queued}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class DocumentDetailApi(APIView):
    @extend_schema(tags=["collections"], operation_id="collection_documents_retrieve", responses=DocumentOutput)
    def get(self, request, name: str, document_id: int):
        collection = selectors.collection_get(name=name)
        document = selectors.document_get(collection=collection, document_id=document_id) if collection else None
        if document is None:
            raise exceptions.NotFound(f"No document {document_id} in collection {name!r}.")
        return Response(DocumentOutput(document).data)

    @extend_schema(tags=["collections"], operation_id="collection_documents_destroy", responses={204: None})
    def delete(self, request, name: str, document_id: int):
        collection = selectors.collection_get(name=name)
        document = selectors.document_get(collection=collection, document_id=document_id) if collection else None
        if document is None:
            raise exceptions.NotFound(f"No document {document_id} in collection {name!r}.")
        services.document_delete(document=document, actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentRetryApi(APIView):
    @extend_schema(tags=["collections"], operation_id="collection_documents_retry", request=None,
                   responses={202: DocumentOutput, 409: OpenApiResponse(description="Already indexed.")})
    def post(self, request, name: str, document_id: int):
        collection = selectors.collection_get(name=name)
        document = selectors.document_get(collection=collection, document_id=document_id) if collection else None
        if document is None:
            raise exceptions.NotFound(f"No document {document_id} in collection {name!r}.")
        services.document_retry(document=document)
        return Response(DocumentOutput(_document_fresh(document.pk)).data, status=status.HTTP_202_ACCEPTED)

