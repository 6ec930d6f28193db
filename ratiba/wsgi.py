"""WSGI entry point (gunicorn ratiba.wsgi)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
application = get_wsgi_application()
