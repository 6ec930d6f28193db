"""Channel API routes (mounted under /api/v1/)."""
from django.urls import path

from channels import api

urlpatterns = [path("email/drafts/", api.EmailDraftApi.as_view(), name="email-drafts")]
