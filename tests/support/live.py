"""A real HTTP server on a free loopback port for tests that need one (SSE, headless Chromium)."""
from __future__ import annotations

import socket
import threading
from contextlib import contextmanager

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from ratiba.wsgi import application

# Debian's chromium (browser downloads do not work here), with the flags a headless container needs.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass


@contextmanager
def serve():
    """Serve the project's WSGI app in a thread; yields the port. Hosts route to tenants as in production."""
    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler)
    server.set_app(application)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def chromium_page(*, width: int = 1200, height: int = 900):
    """A page in headless Chromium (Debian's), closed with its browser afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def sign_in(page, *, url: str, username: str, password: str) -> None:
    """Open a staff page in Playwright and sign in on the admin login form it redirects to."""
    page.set_default_timeout(20_000)
    page.goto(url)
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(url)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
