"""Run benchmarks/overhead.py on every CPython >= 3.11 found (python3 + pyenv) and print
one markdown table of ratios to plain Python, interpreters side by side.

    python benchmarks/report.py
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def interpreters():
    found, seen = [], set()
    candidates = [shutil.which("python3") or sys.executable]
    if shutil.which("pyenv"):
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout
        for v in versions.split():
            prefix = subprocess.run(["pyenv", "prefix", v], capture_output=True, text=True).stdout.strip()
            candidates.append(os.path.join(prefix, "bin", "python"))
    for py in candidates:
        try:
            out = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out and tuple(map(int, out.split("."))) >= (3, 11) and out not in seen:
            seen.add(out)
            found.append(py)
    return found


def main():
    runs = []
    for py in interpreters():
        out = subprocess.run([py, os.path.join(HERE, "overhead.py"), "--json"] + sys.argv[1:],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    keys = []
    for r in runs:  # every row, in the order the runs first show it
        for w, c, *_ in r["cells"]:
            if (w, c) not in keys:
                keys.append((w, c))
    keys.sort(key=lambda k: k[0])  # stable: keeps each workload's row order
    header = "| workload | column | " + " | ".join("CPython %s" % r["python"] for r in runs) + " |"
    lines = [header, "|---|---|" + "---:|" * len(runs)]
    for w, c in keys:
        cells = []
        for r in runs:
            match = [cell for cell in r["cells"] if cell[0] == w and cell[1] == c]
            if not match:
                cells.append("—")
                continue
            _, _, t, ratio, ok = match[0]
            if c == "plain":
                shown = "%.1f µs" % (t * 1e6) if t < 1e-3 else "%.2f ms" % (t * 1e3)
            else:
                shown = "%.2f×" % ratio
            cells.append(shown + ("" if ok else " (DIFFERENT RESULT)"))
        lines.append("| %s | %s | %s |" % (w, c, " | ".join(cells)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
