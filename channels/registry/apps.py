from django.apps import AppConfig


class ChannelsRegistryConfig(AppConfig):
    name = "channels.registry"
    label = "channels_registry"
    verbose_name = "WhatsApp numbers"
    default_auto_field = "django.db.models.BigAutoField"
