"""Who is calling: client tokens and client names (plain Python, no web framework).

**Tokens name clients.** The server is started with one or more tokens, each ``TOKEN`` or
``NAME:TOKEN`` (``--token``, ``--tokens-file`` one per line, or ``$AGENT_ENVS_SERVER_TOKEN``,
whitespace-separated). A request proves who it is with ``Authorization: Bearer TOKEN`` (or
HTTP Basic with the token as the password, for clients that only take a URL:
``http://me:TOKEN@host:port``); its client is the token's ``NAME`` (a bare token is named
``client-`` and 8 hex digits of its SHA-256). Several tokens may share a name (key rotation).
Tokens are compared in constant time: the SHA-256 of the given token against every known one.

**Without tokens** (the default on a loopback address only) every caller is trusted: its
client is the ``X-Client-Id`` header when it sends one (1-64 letters, digits or ``._@+-``;
anything else counts as none), else ``anonymous``. That name keeps cooperating clients'
sessions and limits apart; it proves nothing, since anyone may send any name. With tokens the
header is ignored: the token says who the caller is.

A client's name decides what it sees: the sessions it created, its own share of every
per-client limit (`agent_envs.adapters.server.limits`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "ANONYMOUS",
    "CLIENT_HEADER",
    "TOKEN_VARIABLE",
    "Clients",
    "is_loopback",
    "read_tokens_file",
]

ANONYMOUS = "anonymous"
CLIENT_HEADER = b"x-client-id"
TOKEN_VARIABLE = "AGENT_ENVS_SERVER_TOKEN"
_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to bind or to call) is this machine only:
    ``localhost`` or an address in 127.0.0.0/8 or ``::1``. Wildcards (``0.0.0.0``, ``::``)
    and every other name are not."""
    host = host.strip("[]")
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_tokens_file(path: str | Path) -> list[str]:
    """The tokens in a tokens file: one ``NAME:TOKEN`` (or ``TOKEN``) per line; blank lines
    and lines starting with ``#`` are skipped."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class Clients:
    """The tokens a server accepts and the client each names; no tokens: no authentication.

    Args:
        tokens: ``TOKEN`` or ``NAME:TOKEN`` strings (a token is one word without ``:``), or a
            mapping of token to name; empty or ``None``: every caller is trusted.
    """

    def __init__(self, tokens: Iterable[str] | Mapping[str, str] | str | None = None) -> None:
        if isinstance(tokens, str):
            tokens = [tokens]
        pairs = (
            list(tokens.items())
            if isinstance(tokens, Mapping)
            else [_split(entry) for entry in tokens or ()]
        )
        self._digests: list[tuple[bytes, str]] = []
        seen: set[bytes] = set()
        for token, name in pairs:
            if not isinstance(token, str) or not token or any(c.isspace() for c in token):
                raise ValueError("token must be a non-empty string without spaces")
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ValueError(f"token names must be 1-64 letters, digits or ._@+-, got {name!r}")
            digest = _digest(token.encode())
            if digest in seen:
                raise ValueError(f"a token is given twice (client {name!r})")
            seen.add(digest)
            self._digests.append((digest, name))

    @classmethod
    def generated(cls) -> tuple[Clients, str]:
        """One random token (named ``default``) and the `Clients` that accept it."""
        token = secrets.token_urlsafe(32)
        return cls({token: "default"}), token

    @property
    def required(self) -> bool:
        """Whether requests must carry a token."""
        return bool(self._digests)

    @property
    def names(self) -> list[str]:
        return sorted({name for _, name in self._digests})

    def identify(self, headers: Mapping[bytes, bytes]) -> str | None:
        """The caller's client name from its request headers (lower-case names), or ``None``
        when a token is required and missing or wrong."""
        if not self.required:
            given = headers.get(CLIENT_HEADER, b"").decode("latin-1").strip()
            return given if _NAME.fullmatch(given) else ANONYMOUS
        token = _token(headers.get(b"authorization", b""))
        if token is None:
            return None
        digest, found = _digest(token), None
        for expected, name in self._digests:  # no early exit: the same work for every token
            if hmac.compare_digest(digest, expected):
                found = name
        return found


def _split(entry: str) -> tuple[str, str]:
    if not isinstance(entry, str):
        raise ValueError(f"a token must be a string, got {type(entry).__name__}")
    name, colon, token = entry.strip().rpartition(":")
    if not colon:
        return token, "client-" + hashlib.sha256(token.encode()).hexdigest()[:8]
    return token, name


def _token(header: bytes) -> bytes | None:
    scheme, _, value = header.strip().partition(b" ")
    if scheme.lower() == b"bearer" and value.strip():
        return value.strip()
    if scheme.lower() == b"basic":  # the password is the token; the user name is not read
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        _, colon, password = decoded.partition(b":")
        return password if colon and password else None
    return None
