"""Web processes warm the embedding model and every business's word vectors in the background."""
from __future__ import annotations

import pytest

from knowledge import warmup
from knowledge.retrieval import wordvec


@pytest.mark.parametrize("argv, env, serving", [
    (["/venv/bin/gunicorn", "ratiba.wsgi:application"], {}, True),
    (["/venv/bin/celery", "-A", "ratiba", "worker"], {}, False),  # prefork children would inherit a held lock
    (["/venv/bin/celery", "-A", "ratiba", "beat"], {}, False),
    (["manage.py", "runserver", "127.0.0.1:8000"], {"RUN_MAIN": "true"}, True),
    (["manage.py", "runserver", "127.0.0.1:8000"], {}, False),  # the autoreloader's watcher
    (["manage.py", "runserver", "--noreload"], {}, True),
    (["manage.py", "migrate_schemas"], {}, False),
    (["/venv/bin/pytest"], {}, False),
])
def test_only_serving_processes_warm_up(monkeypatch, argv, env, serving):
    monkeypatch.delenv("RUN_MAIN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert warmup.is_serving(argv) is serving


def test_a_test_run_starts_no_warm_up_thread():
    assert warmup.warm_in_background() is False


@pytest.mark.django_db
def test_warm_up_embeds_the_words_of_live_snippets(tenant):
    from knowledge.services import snippet_version_create

    snippet_version_create(key="parking", title="Parking", body="Free basement parking for guests at Mirage Tower.",
                           category="facility", role="retrieved", queue_embedding=False)
    wordvec._cache.clear()
    assert warmup.warm() >= 6
    assert {"parking", "basement", "mirage", "tower", "guests"} <= set(wordvec._cache)
