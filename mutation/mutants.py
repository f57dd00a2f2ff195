"""One-change mutants of a Python module, enumerated from its syntax tree in a fixed order.

Operators (the usual ones of mutmut and cosmic-ray): comparison flips (< ↔ <=, > ↔ >=, == ↔ !=,
in ↔ not in, is ↔ is not), arithmetic and bitwise swaps (+ ↔ −, * ↔ /, // → /, % → /, << ↔ >>,
& ↔ |, ^ → &, in expressions and augmented assignments), and ↔ or, a dropped ``not`` or unary
minus, an integer constant plus one and a boolean constant flipped. Annotations, docstrings and
string constants are never mutated.
"""

import ast
from dataclasses import dataclass
from typing import Final

_COMPARE: Final[dict[type[ast.cmpop], type[ast.cmpop]]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINARY: Final[dict[type[ast.operator], type[ast.operator]]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutant:
    """The ``index``-th site of ``module`` (a path relative to the repository root)."""

    module: str
    index: int
    line: int
    description: str
    """For example ``Lt -> LtE`` or ``constant 1 -> 2``."""
    source_line: str
    """The original line, stripped (with ``description``, the key of the equivalent list)."""

    @property
    def key(self) -> str:
        return f"{self.module}|{self.source_line}|{self.description}"


def _annotation_ids(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation or a docstring (never mutated)."""
    skip: set[int] = set()
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                roots.append(first)
    for root in roots:
        skip.update(id(n) for n in ast.walk(root))
    return skip


class _Sites(ast.NodeTransformer):
    """Walks the tree in a fixed order, numbering each mutation site; applies site ``target`` if given."""

    def __init__(self, skip: set[int], target: int | None) -> None:
        self.skip = skip
        self.target = target
        self.sites: list[tuple[int, str]] = []

    def _site(self, node: ast.AST, description: str) -> bool:
        """Record a site; True iff it is the one to apply."""
        self.sites.append((getattr(node, "lineno", 0), description))
        return len(self.sites) - 1 == self.target

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if id(node) in self.skip:
            return node
        for i, op in enumerate(node.ops):
            swapped = _COMPARE.get(type(op))
            if swapped is not None and self._site(node, f"{type(op).__name__} -> {swapped.__name__}"):
                node.ops[i] = swapped()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swapped = _BINARY.get(type(node.op))
        if (
            id(node) not in self.skip
            and swapped is not None
            and self._site(node, f"{type(node.op).__name__} -> {swapped.__name__}")
        ):
            node.op = swapped()
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        swapped = _BINARY.get(type(node.op))
        if (
            id(node) not in self.skip
            and swapped is not None
            and self._site(node, f"{type(node.op).__name__}= -> {swapped.__name__}=")
        ):
            node.op = swapped()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if id(node) not in self.skip:
            swapped: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            if self._site(node, f"{type(node.op).__name__} -> {type(swapped).__name__}"):
                node.op = swapped
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if (
            id(node) not in self.skip
            and isinstance(node.op, ast.Not | ast.USub)
            and self._site(node, f"drop {type(node.op).__name__}")
        ):
            return node.operand
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if id(node) in self.skip:
            return node
        if isinstance(node.value, bool):
            if self._site(node, f"constant {node.value} -> {not node.value}"):
                return ast.copy_location(ast.Constant(not node.value), node)
        elif isinstance(node.value, int) and self._site(node, f"constant {node.value} -> {node.value + 1}"):
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def enumerate_mutants(module: str, source: str) -> list[Mutant]:
    """Every mutation site of ``source``, in walk order."""
    tree = ast.parse(source)
    sites = _Sites(_annotation_ids(tree), None)
    sites.visit(tree)
    lines = source.splitlines()
    return [
        Mutant(module=module, index=i, line=line, description=description, source_line=lines[line - 1].strip())
        for i, (line, description) in enumerate(sites.sites)
    ]


def mutated_source(source: str, index: int) -> str:
    """``source`` with exactly its ``index``-th site changed."""
    tree = ast.parse(source)
    sites = _Sites(_annotation_ids(tree), index)
    mutated = sites.visit(tree)
    if index >= len(sites.sites):
        raise ValueError(f"site {index} out of range: the module has {len(sites.sites)} sites")
    return ast.unparse(ast.fix_missing_locations(mutated))
