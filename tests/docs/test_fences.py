"""The block reader and the page runner read the markers as documented and catch a command
that does not do what its page says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.fences import blocks, commands
from tests.docs.test_blocks import run_page

PAGE = """# A page

<!-- not run: needs a GPU -->
```sh
karyamorph microbench
```

<!-- stand-in 3f2a: SELECT run_id FROM runs LIMIT 1 -->
```sh
karyamorph show 3f2a          # one run
karyamorph check x.toml \\
    --strict                  # refuted (exit status 1)
```

```console
$ karyamorph runs
id  kernel
```
"""


def write(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


@pytest.fixture
def page(tmp_path: Path) -> Path:
    return write(tmp_path, PAGE)


def test_markers_and_commands_are_read(page: Path) -> None:
    gpu, show, console = blocks(page)
    assert gpu.not_run == "needs a GPU" and show.not_run is None
    assert show.stand_ins == {"3f2a": "SELECT run_id FROM runs LIMIT 1"}
    assert [status for _, status in commands(show)] == [0, 1]
    assert commands(show)[1][0].split()[:4] == ["karyamorph", "check", "x.toml", "--strict"]
    assert commands(console) == [("karyamorph runs", 0)]


def test_a_comment_the_tests_do_not_read_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "<!-- not-run: typo -->\n```sh\nkaryamorph runs\n```\n")
    with pytest.raises(ValueError, match="a comment the tests do not read"):
        blocks(path)


def test_a_command_that_exits_otherwise_fails_its_page(tmp_path: Path) -> None:
    path = write(
        tmp_path, "```sh\nkaryamorph --version\nkaryamorph runs   # no database yet (exit status 0)\n```\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    failure = run_page(path, work)
    assert failure and "`karyamorph runs" in failure[0] and "exited with 2, not 0" in failure[0]
