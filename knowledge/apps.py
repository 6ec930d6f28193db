from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self):
        # Document collections live in a sub-package: register their ingestion task (workers look it
        # up by name) and their admin pages.
        from knowledge.collections import admin, tasks  # noqa: F401
        # Retrieval settings (mode pin, fusion weights, budgets) are edited in the admin too.
        from knowledge.retrieval import admin as retrieval_admin  # noqa: F401
        # The audit log of owner-visible changes (read-only).
        from knowledge import audit_admin  # noqa: F401
        # Serving processes load the embedding model and word vectors in the background (no first-turn wait).
        from knowledge.warmup import warm_in_background

        warm_in_background()
