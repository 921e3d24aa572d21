"""Long fuzz of kernel specs through the CLI: seeded mutants of every shipped spec, each run as a
user runs it (``karyamorph run SPEC --stages compile,static --no-store``, in this process).

Invariant: a spec rejected at the door (``load_spec``, then the ``.entry`` signature check)
exits 2 with the spec file's name in the message; one that loads exits 0 or 1; no mutant ends
in a traceback (an exception other than the command's own exit) or runs past ``--limit``
seconds. Counts by outcome, as JSON.

Usage: ``python benchmarks/fuzz_specs.py [--count 1000] [--seed 7] [--limit 30]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from click.testing import CliRunner

from karyamorph.cli import main as cli
from karyamorph.isa.errors import PtxError
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import SpecError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.kernel.test_fuzz import write_mutant


class Hang(Exception):
    """A mutant ran past the limit."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--limit", type=int, default=30, help="seconds a mutant may take")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    runner = CliRunner()
    signal.signal(signal.SIGALRM, _alarm)
    outcomes: collections.Counter[str] = collections.Counter()
    problems: list[dict[str, str]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="karyamorph-spec-fuzz-") as tmp:
        for k in range(args.count):
            source, path = write_mutant(Path(tmp) / f"m{k}", rng)
            try:
                prepare(load_spec(path))  # the door: the spec, then its .entry signature
                loads = True
            except (SpecError, PtxError):
                loads = False
            signal.alarm(args.limit)
            try:
                result = runner.invoke(cli, ["run", str(path), "--stages", "compile,static", "--no-store"])
            except Hang:
                outcomes["hang"] += 1
                problems.append({"mutant": path.name, "what": "hang", "text": path.read_text()})
                continue
            finally:
                signal.alarm(0)
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                outcomes["traceback"] += 1
                problems.append({"mutant": f"m{k}/{path.name}", "what": repr(result.exception),
                                 "text": path.read_text()[:2000]})  # fmt: skip
            elif not loads:
                ok = result.exit_code == 2 and source.name in result.output
                outcomes[f"rejected at load, exit {result.exit_code}"] += 1
                if not ok:
                    problems.append({"mutant": f"m{k}/{path.name}", "what": result.output[-500:]})
            else:
                outcomes[f"loaded, exit {result.exit_code}"] += 1
                if result.exit_code not in (0, 1):
                    problems.append({"mutant": f"m{k}/{path.name}", "what": result.output[-500:]})
    report = {"mutants": args.count, "seed": args.seed, "wall_s": round(time.perf_counter() - t0, 1),
              "outcomes": dict(outcomes), "problems": problems[:20],
              "problem_count": len(problems)}  # fmt: skip
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
