"""Every page route of a tenant host, enumerated from the URL configuration, with its parameters filled in.

The isolation suite requests each one with another tenant's identifiers, so a route added later (an admin
model, a dashboard, an export) is probed without editing the suite. /api/v1/ is left to the schema-driven
API probes.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

_PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>|\(\?P<(?P<rname>\w+)>(?P<regex>[^)]*)\)")
SKIPPED_NAMES = {"admin:logout"}  # would sign the prober out half-way through
MAX_URLS_PER_ROUTE = 4


@dataclass(frozen=True)
class Route:
    route: str  # e.g. "admin/knowledge/snippet/<path:object_id>/change/"
    name: str


def tenant_routes(urlconf: str = "ratiba.urls") -> list[Route]:
    """Every pattern of the tenant URLconf except the /api/v1/ operations (those come from the schema)."""
    routes = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for pattern in patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                space = ":".join(part for part in (namespace, pattern.namespace or "") if part)
                walk(pattern.url_patterns, text, space)
            elif isinstance(pattern, URLPattern):
                name = ":".join(part for part in (namespace, pattern.name or "") if part)
                routes.append(Route(route=text, name=name))

    walk(get_resolver(urlconf).url_patterns, "", "")
    return [r for r in routes if not r.route.startswith("api/v1/") and r.name not in SKIPPED_NAMES]


def _model_label(route: str) -> str | None:
    match = re.match(r"admin/(\w+)/(\w+)/", route)
    if not match:
        return None
    from django.apps import apps

    try:
        return apps.get_model(match.group(1), match.group(2))._meta.label
    except LookupError:
        return None


def route_urls(route: Route, *, values: dict[str, list], pks: dict[str, list[int]]) -> list[str]:
    """Concrete URLs for a route: each parameter filled from `values` (by name), ids of the route's model first."""
    text = route.route
    names = []
    for match in _PARAM.finditer(text):
        names.append((match.group("name") or match.group("rname"), match.group("regex")))
    candidates = []
    model = _model_label(text)
    for name, regex in names:
        if regex is not None and "|" in regex:
            options = regex.split("|")  # the admin's app_label alternatives
        elif regex == ".*":
            options = ["knowledge/snippet/1/change/", "does-not-exist/"]
        elif name in ("object_id", "id") and model and pks.get(model):
            options = [pks[model][0], pks[model][-1]]
        else:
            options = values.get(name) or [1, "qzxb7"]
        candidates.append(list(dict.fromkeys(options))[:2])
    urls = []
    for combo in itertools.product(*candidates) if candidates else [()]:
        filled = iter(str(value) for value in combo)
        url = "/" + _PARAM.sub(lambda _m: next(filled), text).replace("^", "").replace("$", "")
        try:
            resolve(url, "ratiba.urls")
        except Resolver404:
            continue
        urls.append(url)
    return list(dict.fromkeys(urls))[:MAX_URLS_PER_ROUTE]
