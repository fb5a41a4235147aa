"""Constructor constraints: when the arguments construct.py chose one by one break a constraint between
them, variants with one argument changed at a time (NOTE [constructor constraints]); tried by
opscan/targets/repository.py (child side)."""

from __future__ import annotations

# NOTE [constructor constraints]
# Values chosen one by one by name can break a constraint between them (transformer-in-transformer
# asserts `patch_size % pixel_size == 0`, both named sizes). When the constructor raises an
# AssertionError/ValueError (or a ZeroDivisionError), the arguments opscan chose are varied one at
# a time over small powers of two (2 ... 128), those the error message names (`pixel size` ->
# `pixel_size`) first, at most MAX_RETRIES constructions (each on `meta`, so cheap); the first that
# builds is taken and the report says which value changed.
MAX_RETRIES = 32
RETRY_ERRORS = (AssertionError, ValueError, ZeroDivisionError)
_LADDER = (2, 4, 8, 16, 32, 64, 128)


def retries(kwargs: dict, chosen: set[str], message: str):
    """(kwargs, words) variants of `kwargs`: one int argument opscan chose changed at a time (NOTE
    [constructor constraints]); those named in `message` first; at most MAX_RETRIES."""
    said = message.lower().replace("_", " ")
    names = [k for k in kwargs if k in chosen and isinstance(kwargs[k], int) and not isinstance(kwargs[k], bool)]
    names.sort(key=lambda k: k.replace("_", " ") not in said)   # stable: the signature order otherwise
    count = 0
    for name in names:
        for value in _LADDER:
            if value == kwargs[name]:
                continue
            if count >= MAX_RETRIES:
                return
            count += 1
            yield {**kwargs, name: value}, f"{name}={value} (retried: {kwargs[name]} broke a constraint)"
