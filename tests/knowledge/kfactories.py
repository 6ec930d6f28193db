"""Small builders for knowledge tests (plain functions over the real services)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from knowledge.services import snippet_version_create


def make_version(key: str = "parking", *, body: str = "Free parking behind the building.", title: str = "Parking",
                 category: str = "facility", role: str = "retrieved", **kwargs):
    kwargs.setdefault("queue_embedding", False)
    return snippet_version_create(key=key, title=title, body=body, category=category, role=role, **kwargs)


def make_user(username: str, *, reviewer: bool = False):
    user = get_user_model().objects.create_user(username=username, is_staff=True)  # unusable password: no slow hashing
    if reviewer:
        user.user_permissions.add(Permission.objects.get(codename="review_snippetversion",
                                                         content_type__app_label="knowledge"))
        user = get_user_model().objects.get(pk=user.pk)  # drop the cached permissions
    return user
