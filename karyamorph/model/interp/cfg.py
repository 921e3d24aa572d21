"""Control-flow graph of a kernel body: basic blocks, edges and immediate post-dominators (networkx)."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from karyamorph.isa import ast

EXIT = -1  # the virtual exit node


class CfgError(ValueError):
    """A body whose control flow cannot be built (e.g. a branch to an unknown label)."""


@dataclass(frozen=True, slots=True)
class BasicBlock:
    """Instructions ``[start, end)`` of the flattened body, entered at ``start``."""

    index: int
    start: int
    end: int
    labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Cfg:
    """Blocks, successor lists, and each block's immediate post-dominator (EXIT = -1).

    ``ipdom[b]`` is None for a block from which the exit is unreachable (an infinite loop).
    """

    blocks: tuple[BasicBlock, ...]
    successors: dict[int, tuple[int, ...]]
    ipdom: dict[int, int | None]
    block_of: tuple[int, ...]
    graph: nx.DiGraph

    def reconvergence_pc(self, block: int, n_instructions: int) -> int:
        """The instruction index where the threads diverging at ``block`` reconverge."""
        p = self.ipdom.get(block)
        if p is None or p == EXIT:
            return n_instructions
        return self.blocks[p].start


def flatten(fn: ast.Function) -> tuple[list[ast.Instruction], dict[str, int]]:
    """The body's instructions in order (nested blocks inlined) and label -> instruction index."""
    instructions: list[ast.Instruction] = []
    labels: dict[str, int] = {}

    def walk(statements: tuple[ast.Statement, ...]) -> None:
        for s in statements:
            if isinstance(s, ast.Instruction):
                instructions.append(s)
            elif isinstance(s, ast.Label):
                labels[s.name] = len(instructions)
            elif isinstance(s, ast.Block):
                walk(s.statements)

    walk(fn.body or ())
    return instructions, labels


def branch_target(ins: ast.Instruction) -> str:
    op = ins.operands[0] if ins.operands else None
    if not isinstance(op, ast.Symbol):
        raise CfgError(f"line {ins.loc.line}: {ins.full_opcode} needs a label operand")
    return op.name


def build_cfg(instructions: list[ast.Instruction], labels: dict[str, int]) -> Cfg:
    """Basic blocks split at labels and after branches/ret/exit; ipdoms on the reversed graph."""
    n = len(instructions)
    leaders = {0} | {i for i in labels.values() if i < n}
    for i, ins in enumerate(instructions):
        if ins.opcode in ("bra", "ret", "exit", "trap") and i + 1 < n:
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x < n) if n else []
    by_start = {s: k for k, s in enumerate(starts)}
    names: dict[int, list[str]] = {}
    for name, i in labels.items():
        names.setdefault(i, []).append(name)
    blocks = tuple(
        BasicBlock(k, s, starts[k + 1] if k + 1 < len(starts) else n, tuple(names.get(s, ())))
        for k, s in enumerate(starts)
    )
    block_of = [0] * n
    for b in blocks:
        for i in range(b.start, b.end):
            block_of[i] = b.index

    def block_at(pc: int) -> int:
        return by_start[pc] if pc < n else EXIT

    succ: dict[int, tuple[int, ...]] = {}
    for b in blocks:
        last = instructions[b.end - 1]
        nxt = block_at(b.end)
        if last.opcode == "bra":
            target = branch_target(last)
            if target not in labels:
                raise CfgError(f"line {last.loc.line}: branch to unknown label {target!r}")
            t = block_at(labels[target])
            succ[b.index] = (t, nxt) if last.guard is not None else (t,)
        elif last.opcode in ("ret", "exit", "trap"):
            succ[b.index] = (EXIT, nxt) if last.guard is not None else (EXIT,)
        else:
            succ[b.index] = (nxt,)
    g = nx.DiGraph()
    g.add_node(EXIT)
    for b in blocks:
        g.add_node(b.index)
        for s in succ[b.index]:
            g.add_edge(b.index, s)
    reachable_to_exit = nx.ancestors(g, EXIT) | {EXIT}
    rev = g.subgraph(reachable_to_exit).reverse(copy=True)
    idom = nx.immediate_dominators(rev, EXIT) if blocks else {}
    ipdom: dict[int, int | None] = {b.index: None for b in blocks}
    for node, dom in idom.items():
        if node != EXIT:
            ipdom[node] = dom
    return Cfg(blocks, succ, ipdom, tuple(block_of), g)
