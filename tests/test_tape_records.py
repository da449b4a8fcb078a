"""Tape records have named kinds (``capstan.reverse.Kind``) and the fields ``Record``'s
docstring gives for each kind: checked on the records a kept tape holds."""
import enum
import math
import operator

import numpy as np

import capstan
from capstan import reverse, tape
from capstan.reverse import GETITEM, GUARD, INPUT, RULE, SETITEM, Kind


def write_read_decide(x, a):
    b = a * 1.0
    b[0] = x
    s = b[1] + math.sin(x)
    if x > 0:
        s = s * 2.0
    return s


def test_kinds_are_one_enum_with_one_name_each():
    assert issubclass(Kind, enum.IntEnum)
    assert [k.name for k in Kind] == ["INPUT", "RULE", "GETITEM", "SETITEM", "CUSTOM", "GUARD"]
    assert len(set(Kind)) == 6
    for k in Kind:
        assert getattr(reverse, k.name) is k
    assert tape.GUARD is GUARD  # one definition, shared by kept tapes


def test_records_hold_the_fields_of_their_kind():
    x, a = 0.5, np.arange(3.0)
    kept = capstan.record_tape(write_read_decide, x, a)
    records = kept.records
    assert all(type(r.kind) is Kind for r in records)
    by_kind = {}
    for n, r in enumerate(records):
        by_kind.setdefault(r.kind, []).append(n)
    assert {INPUT, RULE, GETITEM, SETITEM, GUARD} <= set(by_kind)
    assert len(by_kind[INPUT]) == 2 and by_kind[INPUT] == [0, 1]

    (w,) = by_kind[SETITEM]  # b[0] = x: the value's shape and dtype, where; (array before, value)
    write = records[w]
    assert write.kwargs[0] == () and write.kwargs[1] == 0 and write.kwargs[2] == np.float64
    assert write.parents[1] == 0 and records[write.parents[0]].kind is RULE
    assert write.f is None and write.ans is None

    (r,) = by_kind[GETITEM]  # b[1]: the array's shape and dtype, where; (the array read,)
    read = records[r]
    assert read.kwargs[0] == (3,) and read.kwargs[1] == np.float64 and read.kwargs[2] == 1
    assert read.parents == (w,)

    (g,) = by_kind[GUARD]  # x > 0: the deciding call and its outcome
    guard = records[g]
    assert guard.f is operator.gt and guard.ans is True and guard.vals[0] == x

    rules = [records[n] for n in by_kind[RULE]]
    assert math.sin in [rule.f for rule in rules]
    sin_rule = next(rule for rule in rules if rule.f is math.sin)
    assert sin_rule.ans == math.sin(x) and sin_rule.vals == (x,) and list(sin_rule.parents) == [0]

    assert repr(read).startswith("Record(GETITEM, ") and repr(records[0]) == "Record(INPUT)"
    # the records replay to the right gradient
    gx, ga = kept.gradient(x, a)
    assert math.isclose(gx, 2.0 * math.cos(x), rel_tol=1e-12)
    np.testing.assert_array_equal(ga, [0.0, 2.0, 0.0])
