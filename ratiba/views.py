"""Platform pages: the public landing page and each business's home page."""
from django.db import connection
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from ratiba.selectors import tenant_list_public, tenant_status


def landing(request):
    """Public-schema landing page listing what the platform serves."""
    return render(request, "ratiba/landing.html", {"tenants": tenant_list_public()})


def tenant_home(request):
    """A business's home page: where its knowledge stands, with links to chat, admin and dashboards."""
    return render(request, "ratiba/tenant_home.html",
                  {"tenant": connection.tenant, "status": tenant_status()})


def health(request):
    """Liveness and database check for load balancers."""
    from django.http import JsonResponse

    with connection.cursor() as cursor:
        cursor.execute("select 1")
    return JsonResponse({"status": "ok", "schema": connection.schema_name})


@csrf_exempt  # API clients carry no CSRF token; without this an unknown POST would get the HTML CSRF page
def api_not_found(request, *args, **kwargs):
    """Any /api/ URL no route matched: a JSON 404 in every mode (DEBUG would otherwise answer with HTML)."""
    from django.urls import Resolver404, resolve

    from ratiba.api_errors import json_error

    message = "No such API endpoint (or an identifier in the path is malformed)."
    if not request.path.endswith("/"):
        try:
            resolve(request.path + "/", getattr(request, "urlconf", None))
            message = f"No such API endpoint; did you mean {request.path + '/'!r}?"
        except Resolver404:
            pass
    return json_error(404, message)


def page_not_found(request, exception):
    """An unknown URL: the API's JSON error shape under /api/, Django's page elsewhere."""
    from django.views.defaults import page_not_found as default_page_not_found

    from ratiba.api_errors import json_error

    if request.path.startswith("/api/"):
        return json_error(404, "No such API endpoint (or an identifier in the path is malformed).")
    return default_page_not_found(request, exception)


def server_error(request):
    """An unhandled error: the API's JSON error shape under /api/, Django's page elsewhere."""
    from django.views.defaults import server_error as default_server_error

    from ratiba.api_errors import json_error

    if request.path.startswith("/api/"):
        return json_error(500, "Something went wrong on our side; please retry.", code="internal_error")
    return default_server_error(request)
