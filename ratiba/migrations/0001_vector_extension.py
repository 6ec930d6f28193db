"""The pgvector extension lives in the public schema, created once by this shared app.

A tenant app's migration would create it inside the first tenant's schema, and every
later tenant would then fail with `type "vector" does not exist`.
"""
from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [VectorExtension()]
