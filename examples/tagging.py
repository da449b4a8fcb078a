"""Tagging (Cassette's contextual tagging): a value carries metadata for one context.
Inside that context it behaves like the plain value -- isinstance, arithmetic,
formatting -- and it comes back out of attributes, dataclass fields, lists, dicts and
indexing with its metadata.  A primitive on the tagged type propagates metadata through
arithmetic, here the units of a quantity.

    python examples/tagging.py
"""
import operator
import os
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import overdub  # noqa: E402
from overdub import Tagged, metadata, tag, untag  # noqa: E402


class Units(overdub.Context):
    """Tags carry a unit string; multiplying tagged values multiplies their units."""

    @overdub.primitive(operator.mul, Tagged, Tagged)
    def mul_tt(self, a, b):
        return tag(untag(a, self) * untag(b, self), self,
                   "%s*%s" % (metadata(a, self), metadata(b, self)))

    @overdub.primitive(operator.mul, Tagged)
    def mul_t(self, a, b):
        return tag(untag(a, self) * b, self, metadata(a, self))

    @overdub.primitive(operator.mul, object, Tagged)
    def mul_ot(self, a, b):
        return tag(a * untag(b, self), self, metadata(b, self))


@dataclass
class Rect:
    width: float
    height: float


class Sheet:
    def __init__(self, rects):
        self.rects = rects
        self.by_name = {}


def survey(sheet):
    first = sheet.rects[0]                      # list indexing, then dataclass fields
    area = first.width * first.height
    sheet.by_name["first"] = area               # stored into a dict held by an attribute
    doubled = 2 * sheet.by_name["first"]
    kinds = [isinstance(first.width, float), type(first.width).__name__, "%.1f" % first.width]
    return {"width": first.width, "area": area, "doubled": doubled, "kinds": kinds}


if __name__ == "__main__":
    ctx = Units()
    w, h = tag(3.0, ctx, "m"), tag(2.5, ctx, "m")
    out = overdub.overdub(ctx, survey, Sheet([Rect(w, h)]))
    for key in ("width", "area", "doubled"):
        v = out[key]
        print("%-7s = %r, tagged: %s, metadata: %r"
              % (key, untag(v, ctx), overdub.istagged(v, ctx), metadata(v, ctx)))
    print("inside the context the width looked like:", out["kinds"])
    other = Units()
    print("another context sees no tag:", overdub.istagged(w, other), metadata(w, other))
