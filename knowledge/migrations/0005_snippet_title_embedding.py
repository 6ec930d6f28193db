"""A second vector per snippet version, of its title alone, and the per-tenant weight of its similarity in
fusion (ADR 0007 §1e). It is compared with each retrieval candidate only, so it gets no index.

Versions embedded before this migration have no title vector yet: they go back to `pending` (their
whole-snippet vector is kept, so vector search keeps finding them) and the periodic sweep embeds both.
"""
import pgvector.django
from django.conf import settings
from django.db import migrations, models


def forwards(apps, schema_editor):
    SnippetVersion = apps.get_model("knowledge", "SnippetVersion")
    stale = SnippetVersion.objects.filter(title_embedding__isnull=True, embedding_state="done")
    stale.update(embedding_state="pending")


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0004_retrieval_vector_first_weights")]

    operations = [
        migrations.AddField(
            model_name="snippetversion", name="title_embedding",
            field=pgvector.django.VectorField(blank=True, dimensions=settings.EMBEDDING_DIMENSIONS, null=True),
        ),
        migrations.AddField(model_name="retrievalsettings", name="title_weight",
                            field=models.FloatField(default=0.3)),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
