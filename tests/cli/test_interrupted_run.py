"""Ctrl-C on `karyamorph run` while z3 solves: the run stops, says so, exits 130 and stores
nothing; z3's own "unknown (interrupted from keyboard)" never becomes the kernel's verdict."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A kernel whose race check keeps z3 busy for its whole budget (see its spec).
HARD = ROOT / "tests" / "campaign" / "kernels" / "scatter"


def test_ctrl_c_while_z3_checks_stops_the_run_and_stores_nothing(tmp_path: Path) -> None:
    for ext in ("toml", "ptx"):
        shutil.copy(HARD.with_suffix(f".{ext}"), tmp_path / f"scatter.{ext}")
    argv = [sys.executable, "-m", "karyamorph.cli", "run", "scatter.toml", "--stages", "compile,model",
            "--budget", "20", "--db", "k.duckdb", "--arch", "sm_80"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    time.sleep(8.0)  # imports, compile, and into the model stage's checks
    assert proc.poll() is None, "the run ended before it could be interrupted"
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: the run had not finished, nothing was stored" in err
    assert "Traceback" not in err and time.perf_counter() - t0 < 30
    assert not (tmp_path / "k.duckdb").exists()
