"""The layering of overdub's modules, read from their source with ``ast``.

Every import counts, at module level or inside a function (a lazy import is still a
dependency), except those under ``if TYPE_CHECKING:``, which never run.  The modules
must form no cycle, and the bottom layers depend on nothing of overdub's: the operator
tables (``ops``) and tagged values (``tagging``) need at most ``_compat``.
"""
import ast
import pathlib

import overdub

PACKAGE = pathlib.Path(overdub.__file__).resolve().parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree):
    """The nodes of every import in ``tree`` that can run."""
    out = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _targets(node):
    """The overdub modules an import statement loads."""
    found = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == "overdub" and len(parts) > 1:
                found.add(parts[1])
        return found
    if node.level == 1 or (node.level == 0 and node.module and node.module.split(".")[0] == "overdub"):
        parts = (node.module or "").split(".")
        if node.level == 0:
            parts = parts[1:]
        if parts and parts[0]:
            found.add(parts[0])
        else:  # from . import a, b
            found.update(alias.name for alias in node.names if alias.name in MODULES)
    else:
        assert node.level == 0, "overdub is one flat package: %s" % ast.dump(node)
    return found


def import_graph():
    graph = {}
    for name in MODULES:
        tree = ast.parse((PACKAGE / (name + ".py")).read_text(), filename=name + ".py")
        graph[name] = set().union(*[_targets(n) for n in _imports(tree)]) & set(MODULES)
    return graph


def _cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_reader_sees_lazy_and_relative_imports():
    tree = ast.parse("from . import a, ops\nfrom .tagging import Tagged\nimport overdub.context\n"
                     "def f():\n    from .dispatch import overdub\n"
                     "if TYPE_CHECKING:\n    from .runtime import Runtime\n")
    found = set().union(*[_targets(n) for n in _imports(tree)])
    assert found >= {"ops", "tagging", "context", "dispatch"}
    assert "runtime" not in found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_overdub_imports_form_no_cycle():
    graph = import_graph()
    assert {"dispatch", "tagging", "ops", "context", "codegen", "rewrite", "semantics"} <= set(graph)
    assert _cycles(graph) == []


def test_the_operator_tables_and_tagging_depend_on_nothing():
    graph = import_graph()
    assert graph["ops"] <= {"_compat"}, graph["ops"]
    assert graph["tagging"] <= {"_compat", "_native"}, graph["tagging"]
    assert graph["_compat"] == set()
    assert graph["_native"] == set()  # (the choice between the C layer and its reference)


def test_rewrite_and_context_stay_below_the_dispatcher():
    graph = import_graph()

    def reach(name):
        seen, todo = set(), [name]
        while todo:
            for w in graph[todo.pop()]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    assert "dispatch" not in reach("rewrite") and "semantics" not in reach("rewrite")
    assert "dispatch" not in reach("context")
    assert "dispatch" not in reach("codegen")


def test_version_specific_opcodes_are_named_in_compat():
    """The opcodes ``_compat`` names exist on the running interpreter; where it says
    None, the opcode does not exist (and the rewriter never meets it)."""
    import dis

    from overdub import _compat

    real = {name for name, op in dis.opmap.items() if op < 256}  # (256+: pseudo-instructions)
    for name, opcode in [("BINARY_SLICE", _compat.SLICE_LOAD), ("STORE_SLICE", _compat.SLICE_STORE),
                         ("LOAD_SUPER_ATTR", _compat.SUPER_ATTR)]:
        assert (opcode == name) == (name in real), name
    assert ("CALL_KW" in real) == _compat.PY313 and ("KW_NAMES" in real) == (not _compat.PY313)
    assert ("PRECALL" in real) == _compat.PY311 == (_compat.CALL_PRELUDE == "PRECALL")
    sources = [p.read_text() for p in PACKAGE.glob("*.py") if p.stem != "_compat"]
    for name in ('"BINARY_SLICE"', '"STORE_SLICE"', '"KW_NAMES"', '"PRECALL"',
                 '"CALL_KW"', "version_info"):
        assert not any(name in text for text in sources), name
