# The snippet audit log becomes the audit log of every owner-visible change (ADR 0013): same table, same
# append-only trigger (a trigger follows its table through a rename), plus the subject of each entry.

from django.db import migrations, models

# The message names the whole log now; the trigger itself is unchanged.
APPEND_ONLY_MESSAGE = """
CREATE OR REPLACE FUNCTION knowledge_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only (% refused)', TG_OP;
END $$;
"""
APPEND_ONLY_MESSAGE_REVERSE = """
CREATE OR REPLACE FUNCTION knowledge_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the snippet audit log is append-only (% refused)', TG_OP;
END $$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0010_snippet_translations'),
    ]

    operations = [
        migrations.RenameModel(old_name='SnippetAuditEntry', new_name='AuditEntry'),
        migrations.AlterModelOptions(
            name='auditentry',
            options={'ordering': ['-created_at', '-id'], 'verbose_name': 'audit entry',
                     'verbose_name_plural': 'audit log'},
        ),
        migrations.AddField(
            model_name='auditentry',
            name='subject',
            field=models.CharField(choices=[('snippet', 'Snippet'), ('service', 'Service or product'), ('opening_hours', 'Weekly opening hours'), ('special_day', 'Special day'), ('retrieval_settings', 'Retrieval settings'), ('collection', 'Collection'), ('document', 'Document'), ('api_key', 'API key'), ('handoff', 'Hand-off')], default='snippet', max_length=24),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='action',
            field=models.CharField(choices=[('created', 'Created or saved'), ('activated', 'Activated'), ('rolled_back', 'Rolled back'), ('deactivated', 'Taken out of use'), ('changed', 'Changed'), ('deleted', 'Deleted'), ('issued', 'Key issued'), ('revoked', 'Key revoked')], max_length=16),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='key',
            field=models.CharField(max_length=200),
        ),
        migrations.AddIndex(
            model_name='auditentry',
            index=models.Index(fields=['subject', '-created_at'], name='knowledge_audit_subject'),
        ),
        migrations.RunSQL(APPEND_ONLY_MESSAGE, APPEND_ONLY_MESSAGE_REVERSE),
    ]
