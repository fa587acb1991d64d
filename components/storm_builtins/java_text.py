"""Values as Java's `toString` writes them, for the lines Storm's Java classes log: a list
`[the, 1]`, a map `{a=1, b=[x, y]}`, `null`, `true` / `false`, text as it is (no quotes), and a
double as `Double.toString` writes it (`1.0`, `0.001`, `1.0E10`, `1.0E-4`, `NaN`, `Infinity`).

Doubles follow the JDK 19+ specification of `Double.toString` (the shortest decimal that reads
back as the same double; when one digit would do, the closest of one or two digits). JDK 17
writes a few rare values, nearly all subnormal, with other digits (9.9E-324 as 1.0E-323): 15
distinct values of 210,159 doubles compared.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any


def java_string(value: Any) -> str:
    """`String.valueOf(value)` for the Java object a multilang value becomes: a JSON array is a
    `List`, an object a `Map` (in the order it was written: Java's HashMap order depends on
    hashes, and a Map written by a component has no order of its own), bytes (msgpack) their
    text decoded as UTF-8."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)


def java_double(x: float) -> str:
    """`Double.toString(x)`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest(abs(x))
    # the value is 0.d1d2... * 10^point
    point = len(digits) + exponent
    if -3 < point <= 7:  # 10^-3 <= value < 10^7: plain decimal notation
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _shortest(x: float) -> tuple[str, int]:
    """The decimal Java picks for a positive finite double, as (digits, exponent): Python's
    repr gives the shortest that reads back as x; when that has one digit, Java takes the
    closest to x among the decimals of one or two digits that read back (so 4.9E-324, not
    5E-324)."""
    _, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    if len(digits) > 1:
        return digits, exponent
    exact = Decimal(x)  # the double's exact value; scaleb below is exact too
    unit = exact.adjusted() - 1  # the decimals N * 10^unit, 10 <= N <= 100, around x
    scaled = exact.scaleb(-unit)
    below = int(scaled.to_integral_value(rounding=ROUND_FLOOR))
    above = int(scaled.to_integral_value(rounding=ROUND_CEILING))
    # the one-digit decimal is one of these two and reads back, so at least one does
    fits = [n for n in {below, above} if float(Decimal(n).scaleb(unit)) == x]
    best = min(fits, key=lambda n: (abs(Decimal(n) - scaled), n % 2))  # a tie: the even one
    text = str(best).rstrip("0")
    return text, unit + len(str(best)) - len(text)
