"""Builders over the real services: tests make their rows the way the product does."""
from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from knowledge.services import snippet_version_create

EDITOR_PERMS = ("knowledge.view_snippet", "knowledge.change_snippet", "knowledge.add_snippet")
REVIEW_PERM = "knowledge.review_snippetversion"
REVIEWER_PERMS = EDITOR_PERMS + (REVIEW_PERM,)


def make_version(key: str = "parking", *, body: str = "Free parking behind the building.", title: str = "Parking",
                 category: str = "facility", role: str = "retrieved", **kwargs):
    """Save a version of `key` through the service, live at once (embedding not queued)."""
    # Like a seed file's, past the release gate: the tests of the gate pass enforce_release_gate=True.
    kwargs.setdefault("enforce_release_gate", False)
    # Most tests are transactional: an embedding queued on commit would never run.
    kwargs.setdefault("queue_embedding", False)
    return snippet_version_create(key=key, title=title, body=body, category=category, role=role, **kwargs)


def make_user(username: str, *, superuser: bool = False, reviewer: bool = False, perms: tuple[str, ...] = (),
              password: str | None = None):
    """A staff user of the current schema with the given `app_label.codename` permissions."""
    # Without a password the user has none usable (tests force_login): no slow hashing.
    User = get_user_model()
    if superuser:
        user = User.objects.create_superuser(username=username, password=password, email="")
    else:
        user = User.objects.create_user(username=username, password=password, is_staff=True)
    for perm in (*perms, REVIEW_PERM) if reviewer else perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return User.objects.get(pk=user.pk)  # fresh, without cached permissions


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


def post_json(client, url: str, body: dict, headers: dict, method: str = "post"):
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **headers)
