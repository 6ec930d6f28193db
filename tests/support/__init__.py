"""Helpers every test suite shares: one fake embedder, one live server, builders over the services."""
