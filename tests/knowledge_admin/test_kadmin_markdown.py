"""Snippet bodies are rendered as Markdown that can never run script, in every admin page that shows them."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

from knowledge.markdown import render_markdown
from knowledge.services import snippet_edit
from tests.support.builders import make_version as snippet

EVIL = ('Hello <script>alert(1)</script> [click](javascript:alert(2)) '
        '<img src=x onerror=alert(3)> [data](data:text/html;base64,PHNjcmlwdD4=)')


def test_markdown_is_rendered():
    assert render_markdown("**Free** parking:\n\n- behind\n- [map](https://example.com/map)") == (
        '<p><strong>Free</strong> parking:</p>\n<ul>\n<li>behind</li>\n'
        '<li><a href="https://example.com/map" rel="noopener noreferrer nofollow">map</a></li>\n</ul>')


def test_raw_html_is_shown_as_text_and_script_links_lose_their_target():
    assert render_markdown(EVIL) == (
        '<p>Hello &lt;script&gt;alert(1)&lt;/script&gt; <a rel="noopener noreferrer nofollow">click</a> '
        '&lt;img src=x onerror=alert(3)&gt; <a rel="noopener noreferrer nofollow">data</a></p>')


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize("source", [
    "<a href='javascript:alert(1)'>x</a>", "[x](JaVaScRiPt:alert(1))", "![i](javascript:alert(1))",
    "<svg onload=alert(1)>", "[x](vbscript:msgbox(1))", "<iframe src=https://evil.example></iframe>",
    "<scr<script>ipt>alert(1)</script>", "[x](  javascript:alert(1))", "<style>*{}</style>",
])
def test_no_rendering_contains_an_executable_construct(source):
    parser = _Tags()
    parser.feed(str(render_markdown(source)))
    for tag, attrs in parser.tags:
        assert tag in {"p", "a", "strong", "em"}, tag
        assert not [name for name in attrs if name.startswith("on") or name in {"src", "style"}]
        assert attrs.get("href") is None or attrs["href"].startswith(("http://", "https://", "mailto:"))


@pytest.mark.usefixtures("tenant")
def test_history_diff_release_and_preview_pages_escape_the_body(owner_client, owner):
    first = snippet("evil", title="<b>Title</b>", body="Plain text.", created_by=owner)
    snippet_edit(key="evil", changes={"body": EVIL}, created_by=owner, activate=False)
    base = f"/admin/knowledge/snippet/{first.snippet_id}/"
    pages = [base + "versions/", base + "versions/diff/?a=1&b=2", base + "versions/2/release/", base + "change/",
             "/admin/knowledge/snippet/"]
    for page in pages:
        html = owner_client.get(page).content.decode()
        assert "<script>alert(1)</script>" not in html, page
        assert 'href="javascript:' not in html, page
        assert "<img src=x" not in html, page
        assert "<b>Title</b>" not in html, page
    history = owner_client.get(base + "versions/").content.decode()
    assert "Hello &lt;script&gt;alert(1)&lt;/script&gt;" in history
    assert "&lt;b&gt;Title&lt;/b&gt;" in history
    preview = owner_client.post("/admin/knowledge/snippet/preview/", {"body": EVIL}).json()
    assert preview == {"html": str(render_markdown(EVIL))}


def test_rendered_versions_are_cached_by_content(monkeypatch):
    from django.core.cache import cache

    from knowledge import markdown

    cache.clear()
    calls = []
    real = markdown._render
    monkeypatch.setattr(markdown, "_render", lambda text: calls.append(text) or real(text))
    first = markdown.render_markdown_many(["**a** unique body 1", "unique body 2", "**a** unique body 1"])
    again = markdown.render_markdown("unique body 2")
    assert [str(html) for html in first] == ["<p><strong>a</strong> unique body 1</p>", "<p>unique body 2</p>",
                                             "<p><strong>a</strong> unique body 1</p>"]
    assert again == "<p>unique body 2</p>"
    assert calls == ["**a** unique body 1", "unique body 2", "**a** unique body 1"]
    markdown.render_markdown("unique body 2", cached=False)
    assert calls[-1] == "unique body 2" and len(calls) == 4
