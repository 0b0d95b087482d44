"""Text from passages, model replies and trace files made safe to print on a terminal.

A passage or a model reply can carry terminal escape sequences (``ESC [ 2 J`` clears the
screen, ``ESC ] 0 ;`` sets the window title, ``ESC ] 52`` writes the clipboard on some
terminals); :func:`printable` removes them and every other control character except
newline and tab before anything is printed.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"   # OSC ... BEL / ST
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"      # DCS, PM, APC, SOS ... ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"           # CSI
    r"|\x9b[0-?]*[ -/]*[@-~]?"             # 8-bit CSI
    r"|\x1b[ -/]*[0-~]?"                   # two-character escapes
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (newline and tab
    kept); a lone surrogate (undecodable bytes of a command-line argument) becomes ``?``.

    Example:
        >>> printable("red\\x1b[31m alert\\x1b]0;pwned\\x07 done\\x08")
        'red alert done'
    """
    text = _CONTROLS.sub("", _ESCAPES.sub("", text))
    return _SURROGATES.sub("?", text)
