from django.apps import AppConfig


class RatibaConfig(AppConfig):
    name = "ratiba"
    verbose_name = "Platform"
