"""Builders for knowledge-admin tests, over the real services."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from knowledge.services import snippet_version_create


def snippet(key: str = "parking", *, title: str = "Parking", body: str = "Free parking behind the building.",
            category: str = "facility", role: str = "retrieved", **kwargs):
    """Save a version of `key` through the service (embedding not queued: tests are transactional)."""
    kwargs.setdefault("queue_embedding", False)
    kwargs.setdefault("enforce_release_gate", False)
    return snippet_version_create(key=key, title=title, body=body, category=category, role=role, **kwargs)


def form_data(version, **changes) -> dict:
    """The snippet change form's POST data for `version`'s content, with `changes` applied."""
    data = {
        "title": version.title, "body": version.body, "category": version.category, "role": version.role,
        "status": version.status, "channels": list(version.channels), "language": version.language,
        "tags": ", ".join(version.tags), "related_keys": list(version.related_keys),
        "valid_from": version.valid_from.isoformat() if version.valid_from else "",
        "valid_until": version.valid_until.isoformat() if version.valid_until else "",
        "last_reviewed_at": version.last_reviewed_at.isoformat() if version.last_reviewed_at else "",
        "notes": "", "publish": "on", "base_version": version.version,
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def make_staff(username: str, *, superuser: bool = False, perms: tuple[str, ...] = (), password: str | None = None):
    """A staff user of the current schema with the given `app_label.codename` permissions.

    Without `password` the user cannot log in with one (tests use force_login), which skips the slow hashing.
    """
    User = get_user_model()
    if superuser:
        user = User.objects.create_superuser(username=username, password=password, email="")
    else:
        user = User.objects.create_user(username=username, password=password, is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return User.objects.get(pk=user.pk)  # fresh, without cached permissions


EDITOR_PERMS = ("knowledge.view_snippet", "knowledge.change_snippet", "knowledge.add_snippet")
REVIEWER_PERMS = EDITOR_PERMS + ("knowledge.review_snippetversion",)
