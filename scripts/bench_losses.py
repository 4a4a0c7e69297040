"""Benchmark every softmax variant beside its reference: forward+backward time and peak memory.

    make bench                                   # full sizes, writes results/bench_losses_<device>.md and .json
    python scripts/bench_losses.py --quick       # small sizes, prints only (a check that it runs)
    python scripts/bench_losses.py --only sparse # groups whose title contains "sparse" -> results/bench_losses_<device>_sparse.md

Each page gets its data beside it: the same name with .json (every timed call, medians, ratios,
peak memory, targets and verdicts per row), for pages and reports to read.

Rows come from ``scripts/bench_cases/*.py`` (each module has ``cases(quick) -> list[Case]``);
their references are imported from ``softmax_zoo.losses.reference``, as the tests do, so the benchmark times what the tests check.
Within a group the rows are timed round-robin, in one process, so a ratio compares runs made
under the same machine load. Peak memory is measured per row in a fresh subprocess: the rise of
the peak resident set (CPU, VmHWM after a reset) or of ``torch.cuda.max_memory_allocated`` (GPU) over the inputs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from bench_cases import CASE_MODULES, Case  # noqa: E402
from softmax_zoo.files import write_text  # noqa: E402
from softmax_zoo.provenance import git_state  # noqa: E402
from softmax_zoo.records import changed_files  # noqa: E402
from softmax_zoo.timing import load_average, machine, medians, time_interleaved, utc_now  # noqa: E402


def load_cases(quick: bool, only: str | None) -> list[Case]:
    cases = [c for m in CASE_MODULES for c in importlib.import_module(f"bench_cases.{m}").cases(quick)]
    return [c for c in cases if only is None or only.lower() in c.group.lower()]


def peak_memory_child(group: str, name: str, quick: bool) -> None:
    """Run in a subprocess: print the MiB the step adds to the peak over its inputs."""
    (case,) = [c for c in load_cases(quick, None) if c.group == group and c.name == name]
    step = case.setup()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        print((torch.cuda.max_memory_allocated() - base) / 2**20)
    else:
        # ru_maxrss is inherited across fork/exec, so read the kernel's own high-water mark:
        # writing 5 to clear_refs resets VmHWM to the current resident size (Linux).
        Path("/proc/self/clear_refs").write_text("5")
        base = proc_status_kib("VmRSS")
        step()
        print((proc_status_kib("VmHWM") - base) / 1024)


def proc_status_kib(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (VmRSS: resident now, VmHWM: peak resident)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory(case: Case, quick: bool) -> float | None:
    cmd = [sys.executable, __file__, "--memory-of", case.group, case.name] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    return float(out.stdout.strip().splitlines()[-1])


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def verdict(case: Case, ratio: float | None, mem_ratio: float | None = None) -> str:
    """The row's targets and whether they are met: time (``target``), then ``memory_target``."""
    out = []
    if case.target is not None and ratio is not None:
        op, bound = case.target
        if op == "<=":
            out.append(f"≤ {bound}× : {met(ratio <= bound)}")
        else:
            out.append(f"≥ {bound}× faster: {met(1.0 / ratio >= bound)}")
    if case.memory_target is not None and mem_ratio is not None:
        out.append(f"mem ≤ {case.memory_target}× ({mem_ratio:.2f}×): {met(mem_ratio <= case.memory_target)}")
    return "; ".join(out)


def sweep_lines(rows: list[Case], times: dict[str, list[float]], mems: dict[str, float | None]) -> list[str]:
    """Per sweep of the group (rows sharing ``Case.sweep``): its fastest row, and the baseline's ratios to it, with the
    range of the time ratio over rounds (the two rows ran in every round, so each round gives one ratio)."""
    out, med = [], medians(times)
    for sweep in dict.fromkeys(c.sweep for c in rows if c.sweep):
        best = min((c for c in rows if c.sweep == sweep), key=lambda c: med[c.name])
        base = best.baseline
        line = f"- fastest {sweep}: {best.name}, {med[best.name] * 1e3:.1f} ms"
        if mems.get(best.name) is not None:
            line += f", {mems[best.name]:.0f} MiB"
        if base in med:
            line += f"; {base}: {med[base] / med[best.name]:.2f}× its time"
            per_round = sorted(a / b for a, b in zip(times[base], times[best.name]))
            if len(per_round) > 1:
                line += f" (per round {per_round[0]:.2f}–{per_round[-1]:.2f}×)"
            if mems.get(base) is not None and mems.get(best.name):
                line += f", {mems[base] / mems[best.name]:.2f}× its memory"
        out.append(line)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes; print only, write no report")
    ap.add_argument("--only", help="run the groups whose title contains this text")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds before the timed ones (default 2)")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-row memory subprocesses")
    ap.add_argument("--memory-of", nargs=2, metavar=("GROUP", "NAME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_of:
        peak_memory_child(*args.memory_of, quick=args.quick)
        return

    torch.manual_seed(0)
    load_at_start = load_average()
    cases = load_cases(args.quick, args.only)
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)

    lines = [
        "| variant | time (ms) | × baseline | peak mem (MiB) | target |",
        "|---|---:|---:|---:|---|",
    ]
    report, measured = [], []
    for group, rows in groups.items():
        repeats = 2 if args.quick else (args.repeats or rows[0].repeats)
        times = time_interleaved({c.name: c.setup() for c in rows}, repeats=repeats, warmup=args.warmup)
        med = medians(times)
        report += [f"\n### {group}\n", *lines]
        mems: dict[str, float | None] = {}
        measured_rows: list[dict[str, object]] = []
        for c in rows:
            base = med.get(c.baseline) if c.baseline else None
            ratio = med[c.name] / base if base else None
            mem = mems[c.name] = None if args.no_memory else peak_memory(c, args.quick)
            base_mem = mems.get(c.baseline) if c.baseline else None
            mem_ratio = mem / base_mem if mem is not None and base_mem else None
            row = (
                f"| {c.name} | {med[c.name] * 1e3:.1f} | {'' if ratio is None else f'{ratio:.2f}'} | "
                f"{'' if mem is None else f'{mem:.0f}'} | {verdict(c, ratio, mem_ratio)} |"
            )
            report.append(row)
            measured_rows.append({"variant": c.name, "ms": med[c.name] * 1e3, "ratio": ratio, "mem_mib": mem,
                                  "target": verdict(c, ratio, mem_ratio), "baseline": c.baseline,
                                  "memory_ratio": mem_ratio, "sweep": c.sweep, "seconds": times[c.name]})
            print(f"[{group}] {row}", flush=True)
        sweeps = sweep_lines(rows, times, mems)
        if sweeps:
            report += ["", *sweeps]
            print("\n".join(sweeps), flush=True)
        measured.append({"title": group, "repeats": repeats, "rows": measured_rows})

    if args.quick:
        return
    kind = "cuda" if torch.cuda.is_available() else "cpu"
    # --only runs a part: it gets its own page, and the full report stays whole
    slug = "" if args.only is None else "_" + "".join(ch if ch.isalnum() else "-" for ch in args.only.lower())
    out = ROOT / "results" / f"bench_losses_{kind}{slug}.md"
    command = shlex.join(["python", "scripts/bench_losses.py", *sys.argv[1:]])
    meta = {"command": command.strip(), "machine": machine(), "date": utc_now(),
            "load_average_start": load_at_start, "load_average_end": load_average(), "warmup": args.warmup,
            "git": git_state()}
    code = meta["git"]
    header = [
        f"# Losses benchmark ({kind})",
        "",
        f"- command: `{meta['command']}`" + ("" if len(sys.argv) > 1 else " (or `make bench`)"),
        f"- machine: {meta['machine']}",
        f"- code: commit {code['commit']}" + (f", with uncommitted changes to {changed_files([meta])}" if code["dirty"] else ""),
        f"- date: {meta['date']}; load average at start / end: "
        f"{meta['load_average_start']} / {meta['load_average_end']} (other processes share the cores)",
        "- time: median over repeats of one call (forward+backward unless the row says otherwise),",
        f"  rows of a group interleaved in one process after {args.warmup} untimed warm-up round(s), the row order",
        "  rotated every round; × baseline = this row's time / the baseline row's.",
        "- peak mem: rise of the peak RSS (CPU) or of max_memory_allocated (GPU) over the inputs,",
        "  one fresh subprocess per row.",
        f"- data: {out.with_suffix('.json').name} (every timed call, per row).",
    ]
    write_text(out, "\n".join(header + report) + "\n")
    write_json(out.with_suffix(".json"), command=meta["command"], machine=meta["machine"], date=meta["date"], device=kind,
               load_average={"start": meta["load_average_start"], "end": meta["load_average_end"]},
               warmup=args.warmup, git=meta["git"], groups=measured)
    print(f"wrote {out.relative_to(ROOT)} and its .json")


def write_json(path: Path, **report: object) -> None:
    """The report's data beside its Markdown (``results/bench_losses_<device>.json``): the pages read it, not the Markdown.

    Keys: command, machine, date, device, load_average {start, end}, warmup, git (the code's commit:
    softmax_zoo.provenance.git_state), groups [{title, repeats, rows [{variant,
    ms (the median), ratio, mem_mib, target, baseline, memory_ratio, sweep, seconds (every timed call)}]}]; a page
    migrated from its Markdown has the first five row fields only.
    """
    write_text(path, json.dumps(report, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
