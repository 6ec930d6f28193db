"""Store both snippet vectors inline in the row (STORAGE PLAIN) instead of pgvector's default EXTERNAL.

Two 384-dimension vectors (3 KB) push a version's row over the 2 KB TOAST threshold, so both went out of
line and every candidate's similarity cost two TOAST index lookups per query. Inline they are read with
the row; the row still fits a page (the body, titles and notes stay compressible and toastable). Rows
written before this migration keep their storage until they are rewritten (a new version or `reembed`).
"""
from django.db import migrations

TABLE = "knowledge_snippetversion"


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0007_snippet_title_search")]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE PLAIN, "
            f"ALTER COLUMN title_embedding SET STORAGE PLAIN",
            f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE EXTERNAL, "
            f"ALTER COLUMN title_embedding SET STORAGE EXTERNAL",
        ),
    ]
