"""The text a managed session stores and later sends to a model or prints: checked on the way in.

A prompt, a title or a name that is not valid UTF-8 (``sys.argv`` holds an undecodable byte as a
lone surrogate) cannot be sent to any model API nor written to a terminal; stored, it would break
every later turn of the session. A title or a name is shown on one line of ``sessions list``:
control characters and bidi overrides there are refused too (they are always shown harmless, but
a title that reads differently from what was typed is a mistake worth saying).
"""

from __future__ import annotations

import re
from typing import Final

from praisonai._errors import ConfigError
from praisonai._output import TERMINAL_CONTROLS

#: C0 and C1 controls, DEL, and the bidi overrides and isolates (what may reorder a line): the
#: characters the CLI's filter neutralises, refused here.
_CONTROL: Final = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(TERMINAL_CONTROLS)) + "]")


def utf8_problem(text: str) -> str | None:
    """Why ``text`` is not valid UTF-8 text (its first undecodable byte), or ``None``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = ord(text[exc.start])
        what = f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}"
        return f"it is not valid UTF-8 ({what} at character {exc.start})"
    return None


def line_problem(text: str) -> str | None:
    """Why ``text`` cannot be a one-line label (not UTF-8, or a control character), or ``None``."""
    found = _CONTROL.search(text)
    if found is None:
        return utf8_problem(text)
    return f"it holds the control character U+{ord(found.group()):04X} at character {found.start()}"


def check_prompt(prompt: str | None) -> None:
    """``ConfigError`` (nothing stored, no model asked) for a prompt that is not valid UTF-8."""
    why = None if prompt is None else utf8_problem(prompt)
    if why is not None:
        raise ConfigError(f"the prompt cannot be sent: {why}; give it as UTF-8 text", op="managed")
