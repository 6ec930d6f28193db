from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    name = "channels"
    verbose_name = "Channels (WhatsApp, email, hand-off alerts)"
    default_auto_field = "django.db.models.BigAutoField"
