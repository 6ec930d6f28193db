"""Builders and fakes shared by the fault, audit and privacy tests (a uniquely named module, not conftest)."""
from __future__ import annotations

import hashlib
import json
import math
import re
import socket

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from knowledge.embeddings import EmbeddingInfo
from knowledge.services import snippet_version_create


class HashEmbedder:
    """Bag-of-words hashed into 384 dimensions: deterministic and instant; counts the texts it embeds."""

    info = EmbeddingInfo(name="fake-hash-384", dimensions=384)

    def __init__(self):
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * 384
            for word in re.findall(r"\w+", text.lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


def make_version(key: str = "parking", *, body: str = "Free parking behind the building.", title: str = "Parking",
                 category: str = "facility", role: str = "retrieved", **kwargs):
    kwargs.setdefault("queue_embedding", False)
    return snippet_version_create(key=key, title=title, body=body, category=category, role=role, **kwargs)


def make_user(username: str, *, superuser: bool = False, reviewer: bool = False):
    """A staff user of the current schema without a usable password (no slow hashing; tests force_login)."""
    User = get_user_model()
    if superuser:
        return User.objects.create_superuser(username=username, password=None, email="")
    user = User.objects.create_user(username=username, is_staff=True)
    if reviewer:
        user.user_permissions.add(Permission.objects.get(codename="review_snippetversion",
                                                         content_type__app_label="knowledge"))
        user = User.objects.get(pk=user.pk)  # drop the cached permissions
    return user


def post_json(client, url: str, body: dict, headers: dict, method: str = "post"):
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **headers)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
