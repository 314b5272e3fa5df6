"""Re-run the torch-dependent checks under every CPU kernel family torch offers here, with 1 and 2 threads.

torch picks its CPU kernels per processor: ATEN_CPU_CAPABILITY forces a family (default, avx2,
avx512 on x86-64; default, sve256 on arm64), and the thread count changes how work and
reductions are split. A stored number that one family reproduces and another does not would
fail for a reader on another processor, so `make portability` runs the unit tests marked
`torch` and nbval over the notebooks that use torch once per (family, threads).

`make test` passes --skip-covered: `make unit` and `make nbval` have just run in this
environment's own configuration (torch's choice of family, OMP_NUM_THREADS=1), so it is not run
twice. --skip PATH leaves out a test file or notebook (printed, never silent).

Configurations run side by side, one per usable core (--jobs). That is sound: a configuration's
numbers depend on its kernel family and thread count only (OpenMP splits work by the thread
count, not by timing), no check compares timings, and each run is its own process.

Usage (the Makefile passes the two commands, so they stay the ones `make unit`/`make nbval` use):
    python scripts/portability.py --unit "pytest tests -m torch" --nbval "pytest --nbval book/04a_rope_in_production.ipynb"
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Kernel families in increasing order; a processor that has one has those before it.
FAMILIES = (("default", "avx2", "avx512"), ("default", "sve256"))
CANDIDATES = ("default", "avx2", "avx512", "sve256")
THREADS = (1, 2)


def torch_capability(value: str | None) -> str:
    """What torch reports (torch.backends.cpu.get_cpu_capability) with ATEN_CPU_CAPABILITY=value, or unset."""
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if value is not None:
        env["ATEN_CPU_CAPABILITY"] = value
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def available(auto: str) -> tuple[list[str], dict[str, str]]:
    """The candidate values this processor has, given torch's own choice ``auto``; the others with a reason.

    torch trusts the variable: ATEN_CPU_CAPABILITY=avx512 on a processor without AVX-512 selects
    kernels that crash (illegal instruction). So a value is only tried when it is torch's own
    choice or below it in the same family. A choice this script does not know (a newer torch's
    family, or VSX, ZVECTOR) is run too, with default below it.
    """
    own = auto.lower()
    family = next(
        (f for f in FAMILIES if own in f),
        ("default", own) if own != "default" else ("default",),
    )
    have, skipped = [], {}
    for value in dict.fromkeys(CANDIDATES + (own,)):
        if value in family[: family.index(own) + 1]:
            have.append(value)
        else:
            skipped[value] = (
                f"this processor lacks it (torch's own choice here is {auto})"
            )
    return have, skipped


def plan(auto: str, honoured: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The values to run and the skipped ones with their reason.

    ``honoured[value]`` is what torch reports with ATEN_CPU_CAPABILITY=value (for the values
    :func:`available` returned); a value runs only if torch reports exactly that family.
    """
    have, skipped = available(auto)
    run = []
    for value in have:
        if honoured.get(value) == value.upper():
            run.append(value)
        else:
            skipped[value] = f"torch does not honour it (reports {honoured.get(value)})"
    order = list(dict.fromkeys(CANDIDATES + (auto.lower(),)))
    return run, {value: skipped[value] for value in order if value in skipped}


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores this process may use
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads_of_environment() -> int:
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    # 0: unset, torch picks
    return int(value) if value.isdigit() and int(value) > 0 else 0


def run_configuration(
    capability: str, threads: int, commands: list[tuple[str, list[str]]]
) -> dict:
    env = dict(
        os.environ,
        ATEN_CPU_CAPABILITY=capability,
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
    )
    record = {"capability": capability, "threads": threads, "steps": []}
    for name, command in commands:
        start = time.monotonic()
        result = subprocess.run(
            command, env=env, cwd=ROOT, capture_output=True, text=True
        )
        output = result.stdout + result.stderr
        summary = next(
            (
                line.strip("= ")
                for line in reversed(output.splitlines())
                if line.startswith("=")
            ),
            "",
        )
        record["steps"].append(
            {
                "name": name,
                "returncode": result.returncode,
                "seconds": time.monotonic() - start,
                "summary": summary,
                "output": output,
            }
        )
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--unit", required=True, help="the pytest command of the torch unit tests"
    )
    parser.add_argument(
        "--nbval", required=True, help="the nbval command with the torch notebooks"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PATH",
        help="leave out this test file or notebook (printed in the summary)",
    )
    parser.add_argument(
        "--skip-covered",
        action="store_true",
        help="skip the configuration of this environment (make unit and make nbval ran in it)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=usable_cores(),
        help="configurations run side by side (default: the usable cores)",
    )
    args = parser.parse_args(argv)

    unit = shlex.split(args.unit) + [
        f"--ignore={path}" for path in args.skip if not path.endswith(".ipynb")
    ]
    nbval = [word for word in shlex.split(args.nbval) if word not in args.skip]
    unknown = [path for path in args.skip if not (ROOT / path).exists()]
    if unknown:
        parser.error(f"--skip: no such file {unknown}")
    if not any(word.endswith(".ipynb") for word in nbval):
        parser.error(
            "--nbval names no notebook (pytest would fall back to its testpaths)"
        )
    commands = [("unit tests marked torch", unit), ("nbval, torch notebooks", nbval)]

    auto = torch_capability(None)
    have, _ = available(auto)
    honoured = {value: torch_capability(value) for value in have}
    capabilities, skipped = plan(auto, honoured)
    print(f"torch {auto} by itself; kernel families run: {', '.join(capabilities)}")
    for value, reason in skipped.items():
        print(f"  skipped {value}: {reason}")
    configurations = [(c, t) for c in capabilities for t in THREADS]
    if args.skip_covered:
        own = os.environ.get("ATEN_CPU_CAPABILITY", auto).lower()
        covered = (own, threads_of_environment())
        if covered in configurations:
            configurations.remove(covered)
            print(
                f"  skipped {own} with {covered[1]} thread(s): make unit and make nbval ran in it"
            )
    for path in args.skip:
        print(f"  LEFT OUT BY REQUEST: {path}")

    print(f"{len(configurations)} configurations, {max(1, args.jobs)} at a time")
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        records = list(
            pool.map(lambda ct: run_configuration(*ct, commands), configurations)
        )
    failed = []
    for record in records:
        for step in record["steps"]:
            label = f"{record['capability']:>7s}, {record['threads']} thread(s), {step['name']}"
            status = (
                "ok"
                if step["returncode"] == 0
                else f"FAILED (exit {step['returncode']})"
            )
            print(f"{label:50s} {step['seconds']:6.1f} s  {status}: {step['summary']}")
            if step["returncode"] != 0:
                failed.append((label, step["output"]))
    print(
        f"portability: {len(configurations)} configurations in {time.monotonic() - start:.0f} s"
    )
    for label, output in failed:
        print(f"\n===== {label}\n{output[-20000:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
