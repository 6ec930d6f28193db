"""Retrieval fusion defaults 0.55/0.25/0.05 -> 0.8/0.1/0.0 (vector-first; ADR 0007 §1).

Rows still holding the old defaults get the new ones; weights an owner changed are left alone.
"""
from django.db import migrations, models

OLD = {"vector_weight": 0.55, "keyword_weight": 0.25, "heading_weight": 0.05}
NEW = {"vector_weight": 0.8, "keyword_weight": 0.1, "heading_weight": 0.0}


def forwards(apps, schema_editor):
    RetrievalSettings = apps.get_model("knowledge", "RetrievalSettings")
    RetrievalSettings.objects.filter(**OLD).update(**NEW)


def backwards(apps, schema_editor):
    RetrievalSettings = apps.get_model("knowledge", "RetrievalSettings")
    RetrievalSettings.objects.filter(**NEW).update(**OLD)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_snippet_audit_log")]

    operations = [
        migrations.AlterField(model_name="retrievalsettings", name="vector_weight",
                              field=models.FloatField(default=0.8)),
        migrations.AlterField(model_name="retrievalsettings", name="keyword_weight",
                              field=models.FloatField(default=0.1)),
        migrations.AlterField(model_name="retrievalsettings", name="heading_weight",
                              field=models.FloatField(default=0.0)),
        migrations.RunPython(forwards, backwards),
    ]
