"""Channel secrets at rest: access tokens and app secrets encrypted (Fernet), verify tokens hashed.

The Graph API needs the access token in clear and the signature check needs the app secret, so those two can
only be encrypted; a verify token is only ever compared, so a keyed hash is enough.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted with the configured keys (a rotated-away key, or tampering)."""


def _derived_key() -> bytes:
    # A key of its own for this purpose: SECRET_KEY itself is never used as the Fernet key.
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"ratiba-channel-secrets-v1")
    return base64.urlsafe_b64encode(hkdf.derive(settings.SECRET_KEY.encode()))


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys] if keys else [Fernet(_derived_key())])


def _box() -> MultiFernet:
    return _fernet(tuple(settings.CHANNEL_SECRETS_KEYS), settings.SECRET_KEY)


def secret_encrypt(value: str) -> str:
    """Encrypt a secret for storage ('' stays '')."""
    return _box().encrypt(value.encode()).decode() if value else ""


def secret_decrypt(stored: str) -> str:
    """The clear secret of a stored value ('' stays '')."""
    if not stored:
        return ""
    try:
        return _box().decrypt(stored.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("A stored channel secret cannot be decrypted with CHANNEL_SECRETS_KEYS.") from exc


def verify_token_hash(value: str) -> str:
    """Keyed SHA-256 of a verify token ('' stays '')."""
    if not value:
        return ""
    return hmac.new(settings.SECRET_KEY.encode(), b"wa-verify:" + value.encode(), hashlib.sha256).hexdigest()
