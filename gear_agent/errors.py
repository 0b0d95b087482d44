"""The base of every error gear-agent raises on purpose, so the edges catch one class.

Each package defines its own errors as subclasses of :class:`GearError` (``StoreError``,
``LLMError``, ``CorpusFormatError``, ...); the CLI prints a ``GearError`` as one line and
the server answers it with a status code. This module imports nothing of the project.
"""

from __future__ import annotations


class GearError(Exception):
    """Base of errors whose message is meant for the user as is."""


class UnknownNameError(GearError, ValueError):
    """A name (retriever, scorer, prompt, ...) that is not one of the known ones; lists them."""


class SettingsError(GearError, ValueError):
    """A setting (``GEAR_*`` variable or keyword) has a value that cannot be used."""


class GearWarning(UserWarning):
    """Something a caller should know that does not stop the call (an index created where
    none was, a run that stored text but no triples, ids to delete that are not stored, a
    source that matches nothing); ``warnings.simplefilter("error", GearWarning)`` turns them
    into errors."""
