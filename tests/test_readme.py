"""The README's code examples run as written (the docs pages' examples: tests/docs/)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.docs.test_model_page import check_bfind_machine

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_adding_an_instruction_works_end_to_end() -> None:
    (block,) = [b for b in python_blocks() if "with_instructions" in b]
    scope: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), scope)
    check_bfind_machine(scope["machine"])


def test_parser_example_runs() -> None:
    (block,) = [b for b in python_blocks() if "parse_ptx" in b]
    cwd = os.getcwd()
    os.chdir(README.parent)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)


def test_kernel_example_binds_the_spec() -> None:
    (block,) = [b for b in python_blocks() if "bind(" in b]
    scope: dict[str, object] = {}
    cwd = os.getcwd()
    os.chdir(README.parent)
    try:
        exec(compile(block, "README.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    kernel = scope["kernel"]
    assert kernel.grid == (16, 1, 1) and kernel.shapes["c"] == (4096,)  # type: ignore[attr-defined]
