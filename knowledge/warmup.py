"""Warm a serving process in the background: the embedding model and the word vectors of every business.

Loading MiniLM (and the refusal decision's cross-encoder, when one ships) takes seconds and a snippet's
words are embedded the first time the refusal decision reads them (~0.3 s for a few hundred words): both
would otherwise land on the first customers after a start.
A daemon thread does it right after start-up, so start-up itself is not slower.

Celery workers answer customers too (WhatsApp messages are answered in a task), so they warm as well, but
only where no fork can follow: in each prefork child after it was forked (`worker_process_init`), and in a
solo or threads worker once it is ready. Never in the prefork parent: a child forked while the parent's
warm-up thread holds the model's load lock would wait on that lock for ever (tests/faults/test_worker_kill.py
caught it).
"""
from __future__ import annotations

import logging
import os
import sys
import threading

from celery.signals import worker_process_init, worker_ready
from django.conf import settings

logger = logging.getLogger(__name__)

MAX_WORDS = 50_000  # below the word cache's size, so warming never evicts what it just loaded
_started = False


def is_serving(argv: list[str] | None = None) -> bool:
    """A web server (not a Celery worker, a test run, a migration or another command).

    Celery workers warm through their own signals below, never at start-up: a prefork worker forks its
    children after start-up, and a child forked while the warm-up thread holds the model's load lock would
    wait on that lock for ever.
    """
    argv = argv if argv is not None else sys.argv
    program = argv[0] if argv else ""
    if "gunicorn" in program:
        return True
    # runserver's autoreloader parent only watches files; its child (RUN_MAIN) serves.
    return (len(argv) > 1 and argv[1] == "runserver"
            and (os.environ.get("RUN_MAIN") == "true" or "--noreload" in argv))


def warm() -> int:
    """Load the models, then embed the words of every business's live snippets and the texts its services rows
    are named by (facts.row_by_meaning); returns the word count."""
    from django_tenants.utils import get_public_schema_name, get_tenant_model, schema_context

    from conversations.facts import row_texts, services_list
    from knowledge.embeddings import embed_cached, embed_query
    from knowledge.models import Role, SnippetVersion
    from knowledge.retrieval.relevance import content_words, load_model
    from knowledge.retrieval.wordvec import word_vectors

    try:
        embed_query("warm up")
        if load_model().get("second_stage"):
            from knowledge.retrieval.answerability import warm as warm_answerability

            warm_answerability()
        words: dict[str, None] = {}
        for tenant in get_tenant_model().objects.exclude(schema_name=get_public_schema_name()):
            with schema_context(tenant.schema_name):
                embed_cached(row_texts(services_list()))
                for title, body in SnippetVersion.objects.filter(is_active=True, role=Role.RETRIEVED).values_list(
                        "title", "body").iterator():
                    words.update(dict.fromkeys(content_words(f"{title} {body}")))
                    if len(words) >= MAX_WORDS:
                        break
        chosen = list(words)[:MAX_WORDS]
        for start in range(0, len(chosen), 512):
            word_vectors(chosen[start:start + 512])
        logger.info("warmed the embedding model and %d words", len(chosen))
        return len(chosen)
    except Exception:  # noqa: BLE001 - warming is an optimisation: a failure only means a slower first turn
        logger.warning("warm-up failed; the first turns will load what they need", exc_info=True)
        return 0


def _warm_in_thread() -> None:
    from django.db import connection

    try:
        warm()
    finally:
        connection.close()  # the thread's own connection


def warm_in_background() -> bool:
    """Start the warm-up thread once per process when this process serves traffic."""
    if not is_serving():
        return False
    return _warm_once()


def _warm_once() -> bool:
    global _started
    if _started or not settings.WARM_AT_START:
        return False
    _started = True
    threading.Thread(target=_warm_in_thread, name="ratiba-warm-up", daemon=True).start()
    return True


@worker_process_init.connect
def warm_worker_child(**_kwargs) -> bool:
    """A prefork child, just forked: warm in the background (the signal must return within seconds)."""
    return _warm_once()


@worker_ready.connect
def warm_unforked_worker(sender=None, **_kwargs) -> bool:
    """A solo or threads worker, once ready (it forks nothing); a prefork parent is left cold (see above)."""
    pool = type(getattr(sender, "pool", None)).__module__
    if pool not in ("celery.concurrency.solo", "celery.concurrency.thread"):
        return False
    return _warm_once()
