"""The rewriter itself: it routes every function of real modules, and its fast path
(carrying exception-table depths over instead of re-deriving them) agrees with the
``bytecode`` library's full control-flow analysis."""
import asyncio
import importlib
import types

import bytecode
import pytest

import overdub
from overdub import rewrite

MODULES = ["json.encoder", "json.decoder", "re._parser", "textwrap", "difflib", "fractions",
           "statistics", "heapq", "collections", "ast", "html.parser", "csv", "copy", "pprint",
           "shlex", "urllib.parse", "dataclasses", "enum", "functools", "inspect", "argparse",
           "pathlib", "logging", "asyncio.tasks", "tokenize"]


def code_objects():
    for name in MODULES:
        module = importlib.import_module(name)
        for value in list(vars(module).values()):
            if isinstance(value, types.FunctionType):
                funcs = [value]
            elif isinstance(value, type) and value.__module__.startswith(name):
                funcs = [v for v in vars(value).values() if isinstance(v, types.FunctionType)]
            else:
                continue
            for f in funcs:
                stack = [f.__code__]
                while stack:
                    code = stack.pop()
                    yield code
                    stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


@pytest.mark.parametrize("module", MODULES)
def test_every_function_is_routed_with_exact_exception_tables(module):
    count = 0
    for code in code_objects_of(module):
        inline = count % 2 == 1  # both template variants: with and without inline prehooks
        fast = rewrite.rewrite_code(code, inline_prehook=inline)  # RewriteError if not understood
        full_bc = bytecode.Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
        rewrite.rewrite_bytecode(full_bc, inline)
        full = full_bc.to_code()
        assert fast.co_exceptiontable == full.co_exceptiontable, code.co_qualname
        assert fast.co_stacksize >= full.co_stacksize, code.co_qualname
        assert list(fast.co_positions())[:1] == list(code.co_positions())[:1]
        assert (fast.co_name, fast.co_qualname, fast.co_filename, fast.co_firstlineno) == (
            code.co_name, code.co_qualname, code.co_filename, code.co_firstlineno)
        count += 1
    assert count > 0


def code_objects_of(module):
    global MODULES
    saved, MODULES = MODULES, [module]
    try:
        yield from code_objects()
    finally:
        MODULES = saved


class Hooked(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


class O:
    def m(self, *a):
        return a

    def boom(self):
        raise KeyError("k")


def bad(x):
    raise ValueError(x)


def raise_in_method_argument_comprehension(o, ys):
    try:
        return o.m(1, [bad(y) for y in ys])
    except ValueError as e:
        return ("caught", str(e))


def raise_in_nested_method_calls_with_finally(o):
    out = []
    for i in range(3):
        try:
            out.append(o.m(i, o.m(i, {j: bad(j) if j == 1 else j for j in range(i + 1)})))
        except ValueError as e:
            out.append(("v", str(e)))
        finally:
            out.append("f")
    return out


def raise_inside_with_blocks(o):
    class Suppress:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return True

    r = []
    with Suppress():
        r.append(o.m(o.boom()))
    try:
        with Suppress():
            o.m(1, 2, sum(o.m(*[bad(1)])))
    except ValueError:
        r.append("no")
    r.append("after")
    return r


def raise_into_generator(o):
    def g():
        try:
            yield o.m((yield 1), [x for x in (yield 2)])
        except GeneratorExit:
            raise
        except Exception as e:
            yield ("e", type(e).__name__)

    gen = g()
    return next(gen), gen.send("s"), gen.throw(ValueError("t"))


def raise_in_star_call(o):
    try:
        return o.m(*[o.m(x) for x in (1, 2)], **{"k": bad("kw")})
    except ValueError as e:
        return str(e)


async def awaiting(o):
    try:
        return o.m(await asyncio.sleep(0, 5), [await asyncio.sleep(0, i) for i in range(2)], bad("a"))
    except ValueError as e:
        return ("async", str(e))


def raise_in_coroutine(o):
    return asyncio.run(awaiting(o))


@pytest.mark.parametrize("f", [raise_in_method_argument_comprehension,
                               raise_in_nested_method_calls_with_finally, raise_inside_with_blocks,
                               raise_into_generator, raise_in_star_call, raise_in_coroutine])
def test_exceptions_unwind_mid_expression(f):
    def outcome(run):
        try:
            return ("ok", run())
        except Exception as exc:
            return ("raised", type(exc), str(exc))

    args = (O(), [1, 2]) if f is raise_in_method_argument_comprehension else (O(),)
    assert outcome(lambda: overdub.overdub(Hooked(), f, *args)) == outcome(lambda: f(*args))
