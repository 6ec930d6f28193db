from django.db import migrations, models

import conversations.models


def fill_public_ids(apps, schema_editor):
    Turn = apps.get_model("conversations", "Turn")
    for turn in Turn.objects.filter(public_id__isnull=True).only("pk"):
        turn.public_id = conversations.models.new_turn_id()
        turn.save(update_fields=["public_id"])


class Migration(migrations.Migration):
    dependencies = [("conversations", "0001_initial")]

    operations = [
        migrations.AddField(model_name="turn", name="public_id",
                            field=models.CharField(max_length=40, null=True, editable=False)),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop),
        migrations.AlterField(model_name="turn", name="public_id",
                              field=models.CharField(default=conversations.models.new_turn_id, editable=False,
                                                     max_length=40, unique=True)),
        migrations.AddField(model_name="turn", name="channel",
                            field=models.CharField(choices=[("chat", "Chat"), ("whatsapp", "Whatsapp"),
                                                            ("email", "Email")], default="chat", max_length=16)),
    ]
