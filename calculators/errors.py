"""The error a bad input raises: a ValueError that names its input as data.

`InputError.field` is the name of the input to blame (a dataclass field such as
`micro_batch`, or a command's input such as `price`); a page shows the message at that
field and the command line prints it on one line. No caller parses the message text to
find the field.

The message names the input in its first words (`subject`); a layer that knows the
reader's name for the input (the CLI flag `--price`, the form label "Price") swaps those
words with `renamed`, so the reader sees the name they typed into.
"""

from __future__ import annotations

# A quoted value longer than this is cut: a 20,000-character input is not echoed whole.
QUOTE_LIMIT = 60


class InputError(ValueError):
    """A bad input. `field`: the input's name ('' when no single input is to blame);
    `subject`: the words at the start of the message that name it."""

    def __init__(self, field: str, message: str, *, subject: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.subject = field if subject is None else subject

    def renamed(self, field: str, subject: str) -> InputError:
        """The same error blamed on `field`, its leading `subject` replaced by `subject`."""
        message = str(self)
        if self.subject and message.startswith(self.subject):
            message = subject + message[len(self.subject) :]
        return InputError(field, message, subject=subject)


def shown(value: object) -> str:
    """repr(value), cut to about QUOTE_LIMIT characters with the length said."""
    text = repr(value)
    if len(text) <= QUOTE_LIMIT:
        return text
    return f"{text[: QUOTE_LIMIT - 10]}... ({len(text):,} characters)"
