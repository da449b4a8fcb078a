"""Programs shared by the AD tests: random straight-line scalar programs (a hypothesis
strategy) and a user class with operator overloads."""
import math

from hypothesis import strategies as st


@st.composite
def straight_line(draw, max_steps=10):
    """``(prog, inputs, source)``: a program of +, -, *, / and math functions over 1-3
    inputs whose result sums one to three intermediate values (fan-out included)."""
    n_in = draw(st.integers(1, 3))
    names = [f"x{i}" for i in range(n_in)]
    lines = []
    for k in range(draw(st.integers(1, max_steps))):
        op = draw(st.sampled_from(["+", "-", "*", "/", "sin", "exp", "tanh"]))
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        new = f"t{k}"
        if op == "/":
            lines.append(f"{new} = {a} / (1.5 + math.sin({b}))")
        elif op == "exp":
            lines.append(f"{new} = math.exp(math.tanh({a}))")
        elif op in ("sin", "tanh"):
            lines.append(f"{new} = math.{op}({a})")
        else:
            lines.append(f"{new} = {a} {op} {b}")
        names.append(new)
    used = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    body = "\n    ".join(lines)
    src = f"def prog({', '.join(names[:n_in])}):\n    {body}\n    return {' + '.join(used)}\n"
    ns = {"math": math}
    exec(compile(src, "<prog>", "exec"), ns)  # noqa: S102
    xs = [draw(st.floats(-1.5, 1.5)) for _ in range(n_in)]
    return ns["prog"], xs, src


class Vec2:
    """A user class with operator overloads (unmodified code for the AD tests)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __add__(self, o):
        return Vec2(self.a + o.a, self.b + o.b)

    def __mul__(self, k):
        return Vec2(self.a * k, self.b * k)

    __rmul__ = __mul__

    def norm2(self):
        return self.a * self.a + self.b * self.b
