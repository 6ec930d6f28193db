"""/api/v1/collections/ routes."""
from django.urls import path

from knowledge.collections import api

urlpatterns = [
    path("", api.CollectionListApi.as_view(), name="collections"),
    path("<slug:name>/", api.CollectionDetailApi.as_view(), name="collection"),
    path("<slug:name>/documents/", api.DocumentListApi.as_view(), name="collection-documents"),
    path("<slug:name>/documents/<int:document_id>/", api.DocumentDetailApi.as_view(), name="collection-document"),
    path("<slug:name>/documents/<int:document_id>/retry/", api.DocumentRetryApi.as_view(),
         name="collection-document-retry"),
]
