"""Text spaces with a truthful charset.

Every env prints ASCII only (``STYLE.md`` habit 7), so observations live in
:data:`ASCII_CHARSET`: the printable ASCII characters plus newline and tab. Actions are the
model's whole reply, and ``step`` plays any string: any Unicode, any length (the parser
normalises replies up to :data:`MAX_REPLY_LENGTH` characters and reads longer ones as
written). The action space, a :class:`ReplySpace`, declares exactly that: it contains every
``str``; ``sample()`` draws ASCII replies of at most :data:`MAX_REPLY_LENGTH` characters.
Anything that is not a ``str`` is outside it (``step`` still never raises: such an action is
an invalid, unparseable reply).
"""

from __future__ import annotations

import string

from gymnasium import spaces

__all__ = ["ASCII_CHARSET", "MAX_REPLY_LENGTH", "ReplySpace", "reply_space", "text_space"]

# A string, not a set: ``spaces.Text`` samples from it in order, and a set's order changes
# with the process's hash seed.
ASCII_CHARSET: str = string.ascii_letters + string.digits + string.punctuation + " \n\t"
MAX_REPLY_LENGTH = 16_384


def text_space(max_length: int) -> spaces.Text:
    """A ``spaces.Text`` over :data:`ASCII_CHARSET` (empty text allowed)."""
    return spaces.Text(max_length=max_length, min_length=0, charset=ASCII_CHARSET)


class ReplySpace(spaces.Text):
    """The action space of every text env: one model reply, any ``str``.

    ``contains`` is true for every string (what ``step`` plays), whatever its characters and
    length; ``sample()`` draws from :data:`ASCII_CHARSET` with at most ``max_length``
    characters, as ``spaces.Text`` does.
    """

    def contains(self, x: object) -> bool:
        return isinstance(x, str)

    def __repr__(self) -> str:
        return f"ReplySpace(any str; samples: ASCII, max_length={self.max_length})"


def reply_space() -> ReplySpace:
    """The action space of every text env: one model reply."""
    return ReplySpace(max_length=MAX_REPLY_LENGTH, min_length=0, charset=ASCII_CHARSET)
