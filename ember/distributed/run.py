"""``python -m ember.distributed.run``: torchrun's command line, started as an MPI job.

``python -m ember.distributed.run --nproc-per-node 2 train.py --lr 0.1`` runs
``train.py`` in 2 processes under ``mpiexec`` (found next to the Python
interpreter, where the ``mpich`` wheel puts it, or on ``PATH``). Each process gets
torchrun's environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``ROLE_RANK``, ``ROLE_WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT`` (and ``OMP_NUM_THREADS=1`` unless set), so a
torchrun user's script and command line carry over. One node only: for several,
start ``mpiexec`` with a host file directly."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from typing import Optional

__all__ = ["get_args_parser", "build_command", "main"]


def get_args_parser() -> argparse.ArgumentParser:
    """The launcher's arguments (torchrun's common flags)."""
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start a script in several processes as an MPI job, with torchrun's "
                    "flags and environment.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes on this node: an int, 'cpu' or 'auto' (the CPU count)")
    p.add_argument("--nnodes", default="1", help="must be 1 (use mpiexec for several nodes)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true",
                   help="single-node job (the only kind; accepted for torchrun's sake)")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static",
                   help="accepted for torchrun's sake: MPI does the rendezvous")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0,
                   help="must be 0: an MPI job is not restarted")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (found when omitted)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the script as an executable, not through Python")
    p.add_argument("training_script", help="the script (or module, or executable) to run")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        raise SystemExit("ember.distributed.run: --nproc-per-node gpu: ember has no GPU "
                         "collectives (NCCL)")
    try:
        n = int(value)
    except ValueError:
        raise SystemExit(f"ember.distributed.run: --nproc-per-node must be an int, 'cpu' or "
                         f"'auto', got {value!r}") from None
    if n < 1:
        raise SystemExit(f"ember.distributed.run: --nproc-per-node must be >= 1, got {n}")
    return n


def find_mpiexec() -> Optional[str]:
    """The ``mpiexec`` beside this Python interpreter (the ``mpich`` wheel's), else on PATH."""
    here = os.path.dirname(sys.executable)
    return shutil.which("mpiexec", path=here) or shutil.which("mpiexec")


def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def build_command(argv: Optional[list] = None) -> list:
    """The ``mpiexec`` command line for launcher arguments ``argv``: one MPMD block
    per rank, each with its own torchrun-style environment."""
    args = get_args_parser().parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        raise SystemExit("ember.distributed.run: one node only; for several nodes start "
                         "mpiexec with a host file (ranks come from MPI)")
    if args.max_restarts:
        raise SystemExit("ember.distributed.run: --max-restarts must be 0 (an MPI job is not "
                         "restarted)")
    n = _nproc(args.nproc_per_node)
    mpiexec = args.mpiexec or find_mpiexec()
    if mpiexec is None:
        raise SystemExit("ember.distributed.run: no mpiexec found: pip install mpich "
                         "(or ember[distributed])")
    if args.no_python:
        prog = [args.training_script]
    elif args.module:
        prog = [sys.executable, "-u", "-m", args.training_script]
    else:
        prog = [sys.executable, "-u", args.training_script]
    prog += list(args.training_script_args)
    env = {"WORLD_SIZE": n, "LOCAL_WORLD_SIZE": n, "GROUP_RANK": 0, "ROLE_WORLD_SIZE": n,
           "MASTER_ADDR": args.master_addr, "MASTER_PORT": args.master_port}
    if "OMP_NUM_THREADS" not in os.environ and n > 1:
        env["OMP_NUM_THREADS"] = 1
        warnings.warn("ember.distributed.run: OMP_NUM_THREADS is set to 1 in each process so "
                      "the processes do not overload the CPU; set it to tune", stacklevel=2)
    open_mpi = _is_open_mpi(mpiexec)
    cmd = [mpiexec]
    if open_mpi:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    for rank in range(n):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1"]
        rank_env = dict(env, RANK=rank, LOCAL_RANK=rank, ROLE_RANK=rank)
        for k, v in rank_env.items():
            cmd += ["-x", f"{k}={v}"] if open_mpi else ["-env", k, str(v)]
        cmd += prog
    return cmd


def main(argv: Optional[list] = None) -> int:
    """Run the job; its exit status."""
    cmd = build_command(argv)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
