"""The Python callables orchestration IR reaches through `pyobj.call`: Python's own
operators and builtins, and a few small helpers for what has no single builtin
(displays, `in`, raising, f-strings). Each sits in the environment table of the
module that uses it; the IR names it only for reading."""

from __future__ import annotations

import builtins
import operator

BINARY = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
          "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow,
          "LShift": operator.lshift, "RShift": operator.rshift, "BitOr": operator.or_,
          "BitXor": operator.xor, "BitAnd": operator.and_, "MatMult": operator.matmul}
INPLACE = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
           "FloorDiv": operator.ifloordiv, "Mod": operator.imod, "Pow": operator.ipow,
           "LShift": operator.ilshift, "RShift": operator.irshift, "BitOr": operator.ior,
           "BitXor": operator.ixor, "BitAnd": operator.iand, "MatMult": operator.imatmul}
UNARY = {"Not": operator.not_, "USub": operator.neg, "UAdd": operator.pos, "Invert": operator.invert}


def is_in(a, b):
    return a in b


def not_in(a, b):
    return a not in b


COMPARE = {"Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le,
           "Gt": operator.gt, "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
           "In": is_in, "NotIn": not_in}


def call(fn, *args, **kwargs):
    """A call of a value computed at run time (a method, a function passed in)."""
    return fn(*args, **kwargs)


def build_list(*items):
    return list(items)


def build_tuple(*items):
    return items


def build_set(*items):
    return set(items)


def build_dict(*keys_values):
    return dict(zip(keys_values[::2], keys_values[1::2]))


def as_sequence(iterable):
    """What `for x in iterable` loops over by index: immutable sequences as they
    are, anything else materialised once (as a tuple) before the loop."""
    return iterable if type(iterable) in (tuple, range, str, bytes) else tuple(iterable)


def raise_(exc):
    raise exc


def raise_from(exc, cause):
    raise exc from cause


def assert_fail(*message):
    raise AssertionError(*message)


def fstring(*parts):
    return "".join(parts)


def format_value(value, conversion: int, spec: str):
    """One `{value!c:spec}` of an f-string."""
    if conversion == ord("s"):
        value = str(value)
    elif conversion == ord("r"):
        value = repr(value)
    elif conversion == ord("a"):
        value = ascii(value)
    return format(value, spec)


def to_int(x):
    """A Python state / confidence function's result as the i32 a decision compares."""
    return builtins.int(x)

