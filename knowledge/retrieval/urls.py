"""Retrieval API routes (included under /api/v1/)."""
from django.urls import path

from knowledge.retrieval.api import RetrieveApi

urlpatterns = [path("retrieve/", RetrieveApi.as_view(), name="retrieve")]
