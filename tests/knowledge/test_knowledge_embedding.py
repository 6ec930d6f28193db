"""Embeddings: the task (real model once), idempotency, broker outages, the pending sweep and `reembed`."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from kombu.exceptions import OperationalError

from knowledge.embeddings import EmbeddingError
from knowledge.models import EmbeddingState, SnippetVersion
from knowledge.tasks import embed_pending_sweep, embed_snippet_version
from tests.support.builders import make_version


def test_the_task_embeds_with_the_real_local_model(tenant, real_embedder):
    massage = make_version("deep_tissue", title="Deep tissue massage",
                           body="A firm massage that works on knots and sore shoulder muscles.")
    similar = make_version("sports_massage", title="Sports massage",
                           body="Strong massage for stiff muscles and tight shoulders after training.")
    parking = make_version("parking", title="Parking", body="Free parking for guests behind the building.")
    for version in (massage, similar, parking):
        assert embed_snippet_version(version.pk) == 1
    rows = {v.key: v for v in SnippetVersion.objects.all()}
    assert {v.embedding_state for v in rows.values()} == {EmbeddingState.DONE}
    assert {v.embedding_model for v in rows.values()} == {"all-MiniLM-L6-v2"}
    vectors = {key: np.array(v.embedding) for key, v in rows.items()}
    assert vectors["deep_tissue"].shape == (384,)
    assert float(np.linalg.norm(vectors["deep_tissue"])) == pytest.approx(1.0, abs=1e-3)
    # The title alone gets its own vector, the same one the model gives the bare title.
    from knowledge.embeddings import embed_texts

    title_vector = np.array(rows["parking"].title_embedding)
    assert float(title_vector @ np.array(embed_texts(["Parking"])[0])) == pytest.approx(1.0, abs=1e-4)
    assert float(title_vector @ vectors["parking"]) < 0.99  # not a copy of the full text's vector
    close = float(vectors["deep_tissue"] @ vectors["sports_massage"])
    far = float(vectors["deep_tissue"] @ vectors["parking"])
    assert close > 0.5 and far < 0.2, (close, far)
    # Done with the current model: a second run is a no-op.
    assert embed_snippet_version(massage.pk) == 0


def test_the_task_is_idempotent(tenant, fake_embedder):
    version = make_version("parking")
    assert embed_snippet_version(version.pk) == 1
    assert embed_snippet_version(version.pk) == 0
    assert fake_embedder.calls == [2]  # one model call: the full text and the title


def test_a_permanent_provider_error_marks_the_version_failed(tenant, fake_embedder, monkeypatch):
    version = make_version("parking")
    monkeypatch.setattr(fake_embedder, "embed", lambda texts: (_ for _ in ()).throw(
        EmbeddingError("bad request", retryable=False)))
    assert embed_snippet_version(version.pk) == 0
    version.refresh_from_db()
    assert version.embedding_state == EmbeddingState.FAILED


def test_a_retryable_error_inline_leaves_the_version_pending(tenant, fake_embedder, monkeypatch):
    version = make_version("parking")
    monkeypatch.setattr(fake_embedder, "embed", lambda texts: (_ for _ in ()).throw(
        EmbeddingError("timeout", retryable=True)))
    embed_snippet_version.apply(args=[version.pk])
    version.refresh_from_db()
    assert version.embedding_state == EmbeddingState.PENDING


def test_saving_queues_the_embedding_on_commit(committed, fake_embedder):
    version = make_version("parking", queue_embedding=True)
    version.refresh_from_db()
    assert (version.embedding_state, version.embedding_model) == (EmbeddingState.DONE, "fake-hash-384")


def test_a_broker_outage_still_saves_and_the_sweep_embeds_later(committed, fake_embedder, monkeypatch):
    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(embed_snippet_version, "delay", broker_down)
    version = make_version("parking", queue_embedding=True)
    version.refresh_from_db()
    assert (version.pk is not None, version.is_active, version.embedding_state) == (True, True, EmbeddingState.PENDING)
    swept = embed_pending_sweep()
    assert swept.get(committed.schema_name) == 1
    version.refresh_from_db()
    assert version.embedding_state == EmbeddingState.DONE


def test_the_sweep_is_registered_with_beat(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["knowledge-embed-pending-sweep"]
    assert entry["task"] == embed_pending_sweep.name == "knowledge.embed_pending_sweep"


def test_reembed_embeds_stale_versions_in_batches(tenant, fake_embedder):
    for number in range(5):
        make_version(f"fact-{number}", body=f"Fact number {number}.")
    out = io.StringIO()
    call_command("reembed", "--tenant", "test_tenant", "--batch-size", "2", stdout=out)
    # Two texts per version (full text, title), one model call per batch.
    assert fake_embedder.calls == [4, 4, 2]
    assert "test_tenant: 5 version(s) and 0 chunk(s) embedded with fake-hash-384" in out.getvalue()
    SnippetVersion.objects.filter(key="fact-0").update(embedding_model="an-old-model")
    call_command("reembed", "--tenant", "test_tenant", stdout=io.StringIO())
    assert fake_embedder.calls == [4, 4, 2, 2]
    call_command("reembed", "--tenant", "test_tenant", "--force", stdout=io.StringIO())
    assert fake_embedder.calls == [4, 4, 2, 2, 10]


def test_reembed_needs_a_target_and_a_real_tenant(tenant):
    with pytest.raises(CommandError):
        call_command("reembed")
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        call_command("reembed", "--tenant", "nope")


def test_the_sweep_reembeds_versions_made_by_another_model(committed, fake_embedder):
    version = make_version("parking")
    SnippetVersion.objects.filter(pk=version.pk).update(embedding_state=EmbeddingState.DONE,
                                                        embedding_model="an-old-model")
    assert embed_pending_sweep().get(committed.schema_name) == 1
    version.refresh_from_db()
    assert (version.embedding_state, version.embedding_model) == (EmbeddingState.DONE, "fake-hash-384")
    assert committed.schema_name not in embed_pending_sweep()  # current vectors are left alone


def test_a_misconfigured_embedder_leaves_seeding_and_the_sweep_standing(committed, monkeypatch, caplog):
    from knowledge import embeddings
    from knowledge.seed import seed_apply, seed_parse

    def misconfigured():  # what get_embedder raises for an unknown EMBEDDING_PROVIDER
        raise EmbeddingError("Unknown EMBEDDING_PROVIDER 'no-such-provider'", retryable=False)

    monkeypatch.setattr(embeddings, "get_embedder", misconfigured)
    report = seed_apply(seed=seed_parse(text=(
        "snippets:\n- key: parking\n  category: facility\n  role: retrieved\n  title: Parking\n"
        "  body: Free parking behind the building.\n")))
    assert "Unknown EMBEDDING_PROVIDER" in report.embedding_error and report.embedded == 0
    assert SnippetVersion.objects.get(key="parking", is_active=True).embedding_state == EmbeddingState.PENDING
    assert embed_pending_sweep() == {}
    assert "pending sweep: embedding unavailable" in caplog.text
