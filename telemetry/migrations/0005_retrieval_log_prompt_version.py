# Every turn's log row names the answer shaper's prompt version in force (issue 13).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0004_rollups_and_section_key_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='retrievallog',
            name='prompt_version',
            field=models.CharField(blank=True, max_length=20),
        ),
    ]
