"""Safe Markdown rendering for snippet bodies shown in the browser (admin previews, history, diffs)."""
from __future__ import annotations

import hashlib
import threading

import markdown as _markdown
import nh3
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a",
    "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto", "tel"}
# Bump when the rendering rules change: cached HTML from older rules is then never served.
RENDERER_VERSION = 1
CACHE_SECONDS = 24 * 3600

_local = threading.local()


class _EscapeRawHtml(_markdown.Extension):
    """Treat raw HTML in the source as text: an owner who types <b> sees <b>, nothing is interpreted."""

    def extendMarkdown(self, md):  # noqa: N802 - Markdown's API name
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


def _converter() -> _markdown.Markdown:
    # Building a Markdown instance with its extensions costs about as much as a short render: keep one
    # per thread (instances are not thread-safe) and reset it between documents.
    converter = getattr(_local, "converter", None)
    if converter is None:
        converter = _local.converter = _markdown.Markdown(
            extensions=[_EscapeRawHtml(), "sane_lists", "tables"], output_format="html")
    converter.reset()
    return converter


def _render(text: str) -> str:
    html = _converter().convert(text)
    # Second line of defence: an allow-list sanitiser drops anything Markdown could still emit that is
    # unsafe, chiefly javascript:/data: link targets, and marks links as leaving the admin.
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes=ALLOWED_URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow")


def _cache_key(text: str) -> str:
    return f"kn-md:{RENDERER_VERSION}:{hashlib.sha256(text.encode()).hexdigest()}"


def render_markdown(text: str, *, cached: bool = True) -> SafeString:
    """Render snippet Markdown to HTML that cannot run script (raw HTML escaped, then sanitised).

    Versions never change, so their HTML is cached by content hash; a live preview passes cached=False.
    """
    if not text:
        return mark_safe("")
    if not cached:
        return mark_safe(_render(text))  # noqa: S308 - sanitised in _render
    return render_markdown_many([text])[0]


def render_markdown_many(texts: list[str]) -> list[SafeString]:
    """render_markdown for several texts with one cache round trip (a history page shows every version)."""
    keys = [_cache_key(text) for text in texts]
    found = cache.get_many(keys)
    missing = {}
    result = []
    for key, text in zip(keys, texts):
        html = found.get(key)
        if html is None:
            html = missing[key] = _render(text) if text else ""
        result.append(mark_safe(html))  # noqa: S308 - sanitised in _render (or cached from it)
    if missing:
        cache.set_many(missing, CACHE_SECONDS)
    return result
