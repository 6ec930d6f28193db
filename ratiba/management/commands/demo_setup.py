"""python manage.py demo_setup — the demo business, its knowledge and an owner login (used by `make run`)."""
import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django_tenants.utils import schema_context

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "demo_business.yaml"


class Command(BaseCommand):
    help = "Seed the demo business from demo/demo_business.yaml and print its owner login. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--file", default=str(DEMO_FILE))

    def handle(self, *args, file, **options):
        call_command("seed_knowledge", file, stdout=self.stdout, stderr=self.stderr)
        password = os.environ.get("DEMO_ADMIN_PASSWORD", "ratiba-demo")
        with schema_context("demo"):
            user, _ = get_user_model().objects.get_or_create(username="owner", defaults={"email": "owner@demo.localhost"})
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
        self.stdout.write(f"Admin login for http://demo.localhost:8000/admin/ -> user: owner  password: {password}")
