"""Prompt API routes (mounted under /api/v1/)."""
from django.urls import path

from conversations.prompt_api import PromptAssembleApi

urlpatterns = [
    path("prompts/assemble/", PromptAssembleApi.as_view(), name="prompts-assemble"),
]
