"""Input validation for the suffix structures (docs/suffix-decoding.md §2.2).

Every check runs before any state changes, and every failure names the argument, the index and the
value. Token sequences are converted once into a plain ``list[int]``, the form the tree stores.
"""

import array
import math
import operator
import struct
from collections.abc import Sequence
from typing import Any, Final, cast

import numpy as np

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
#: The two values upstream's hash map reserves as sentinels: never a token or a sequence id.
RESERVED: Final = (INT32_MIN, INT32_MIN + 1)
TOKEN_MIN: Final = INT32_MIN + 2


class SuffixInputError(ValueError, TypeError):
    """Rejected input. A ``ValueError`` per the contract, and a ``TypeError`` because upstream's
    bindings raise that for non-integers and out-of-range values, so handlers for either work."""


def check_int32(name: str, value: object) -> int:
    """``operator.index(value)`` within int32 (a bool counts as 0/1, as upstream)."""
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise SuffixInputError(f"{name} = {value!r} is not an integer") from None
    if not INT32_MIN <= number <= INT32_MAX:
        raise SuffixInputError(f"{name} = {number} is outside int32 [{INT32_MIN}, {INT32_MAX}]")
    return number


def check_id(name: str, value: object) -> int:
    """A token or sequence id: int32 and not reserved."""
    number = check_int32(name, value)
    if number < TOKEN_MIN:
        raise SuffixInputError(f"{name} = {number} is reserved (INT32_MIN, INT32_MIN+1)")
    return number


def check_tokens(name: str, tokens: object) -> list[int]:
    """A sequence of token ids (``Sequence`` but not str/bytes, or a 1-D integer ndarray)."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1:
            raise SuffixInputError(f"{name} must be 1-D, got ndim={tokens.ndim}")
        if tokens.dtype.kind not in "iu":
            raise SuffixInputError(f"{name} must have an integer dtype, got dtype={tokens.dtype.name}")
        if tokens.size and (int(tokens.min()) < TOKEN_MIN or int(tokens.max()) > INT32_MAX):
            return _find_bad_token(name, tokens.tolist())
        return [int(t) for t in tokens.tolist()]
    check_sequence_type(name, tokens)
    items = cast(Sequence[Any], tokens)
    try:
        packed = array.array("i", items)
    except (TypeError, OverflowError, ValueError):
        return _find_bad_token(name, items)
    if packed and min(packed) < TOKEN_MIN:
        return _find_bad_token(name, items)
    return packed.tolist()


def check_sequence_type(name: str, tokens: object) -> None:
    """A ``Sequence`` other than str/bytes/bytearray, or an ndarray (whose checks come later)."""
    if isinstance(tokens, np.ndarray):
        return
    if isinstance(tokens, (str, bytes, bytearray)) or not isinstance(tokens, Sequence):
        raise SuffixInputError(
            f"{name} must be a sequence of ints or a 1-D integer ndarray, got {type(tokens).__name__}"
        )


def _find_bad_token(name: str, tokens: Sequence[object]) -> list[int]:
    """The slow path: name the first offending element (always raises for a rejected input)."""
    checked = [check_id(f"{name}[{index}]", token) for index, token in enumerate(tokens)]
    return checked


def check_float(name: str, value: object) -> float:
    """``int``, ``float`` or a numpy integer/floating scalar, rounded once to float32."""
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} = {value!r} must be an int or a float, not {type(value).__name__}")
    try:
        as_double = float(value)
    except OverflowError:
        raise TypeError(f"{name} = {value!r} does not fit a double") from None
    return f32(as_double)


def check_bool(name: str, value: object) -> bool:
    """Exactly ``True`` or ``False`` (upstream rejects 1 and ``numpy.bool_``)."""
    if value is True or value is False:
        return value
    raise TypeError(f"{name} = {value!r} must be True or False, not {type(value).__name__}")


def f32(value: float) -> float:
    """``value`` rounded to the nearest binary32 (ties to even), as a Python float; overflow gives ±inf."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


_F32: Final = struct.Struct("f")
