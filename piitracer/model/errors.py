"""The one root of every error piitracer reports to a person.

Each layer raises its own subclass with a message that names the file, line, field, step or
dataset and what was expected (never a subject value). The CLI catches ``PiitracerError`` only:
anything else — a ``KeyError``, a ``TypeError`` — is a bug in piitracer and shows its traceback.
"""

from __future__ import annotations


class PiitracerError(Exception):
    """A problem with piitracer's input or environment that a person can act on (exit 2)."""


class NotFoundError(PiitracerError, KeyError):
    """Something a person named (a dataset, a column, a request) does not exist. A ``KeyError``
    too, so lookups keep their usual contract; shown without KeyError's quotes."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class BadKeyError(PiitracerError):
    """A key (audit, master, signing) that is missing, unreadable, too short, open to group or
    others, or not the key that is needed: the message says which and how to supply it."""
