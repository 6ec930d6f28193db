# Key scopes (ADR 0013): existing keys keep every API (full); chat keys are issued as such.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ratiba', '0004_tenant_health_snapshot'),
    ]

    operations = [
        migrations.AlterModelOptions(name='apikey', options={'ordering': ['-created_at'], 'verbose_name': 'API key'}),
        migrations.AddField(
            model_name='apikey',
            name='scope',
            field=models.CharField(choices=[('chat', 'Chat only (publishable: website widget)'), ('full', 'Full (every API: authoring, documents, telemetry)')], default='full', max_length=8),
        ),
    ]
