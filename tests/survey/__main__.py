"""``python -m tests.survey [SUBSTRING ...] [--no-write]``: run the survey, print one
table per library (forward and reverse: correct / clear error / silent wrong / crash)
and every run that is not correct, one line each, and rewrite ``refused.txt`` (the clear
errors) unless cases were selected or ``--no-write`` is given."""
import collections
import os
import re
import sys
import time

from . import LIBRARIES, all_cases
from .reference import UnreliableReference, reference
from .runner import KINDS, MODES, run

REFUSED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refused.txt")


def refused_line(case, mode, outcome):
    """The line of refused.txt for a clear error (addresses blanked, so it is stable)."""
    text = re.sub(r" at 0x[0-9a-f]+", "", outcome.first_line)
    text = re.sub(r"/(?:[^\s/:]+/)+", "", text)    # paths: file names only
    return "%s  %s  %s: %s" % (case.id, mode, outcome.via, text[:160])


def survey(cases, out=sys.stdout):
    """Run every case in both modes; print the report; return (counts, refused lines, problems)."""
    counts = collections.defaultdict(collections.Counter)
    refused, problems, bad_cases = [], [], []
    for case in cases:
        try:
            ref = reference(case)
        except Exception as e:  # noqa: BLE001 -- a case that cannot be judged is the survey's bug
            bad_cases.append(str(e) if isinstance(e, (UnreliableReference, AssertionError))
                             else "%s: plain run fails: %s: %s" % (case.id, type(e).__name__, e))
            continue
        for mode in MODES:
            kind, outcomes = run(case, mode, ref)
            counts[(case.library, mode)][kind] += 1
            for o in outcomes:
                if o.kind == "clear error":
                    refused.append(refused_line(case, mode, o))
                elif o.kind != "correct":
                    problems.append("%-13s %-45s %-8s %-9s %s%s" % (o.kind, case.id, mode, o.via, o.detail,
                                                                  " [%s]" % o.frame if o.frame else ""))
    header = "%-18s %-8s " % ("library", "mode") + " ".join("%12s" % k for k in KINDS)
    print(header, file=out)
    print("-" * len(header), file=out)
    total = {m: collections.Counter() for m in MODES}
    for lib in LIBRARIES:
        for mode in MODES:
            c = counts.get((lib, mode))
            if c:
                total[mode].update(c)
                print("%-18s %-8s " % (lib, mode) + " ".join("%12d" % c[k] for k in KINDS), file=out)
    print("-" * len(header), file=out)
    for mode in MODES:
        print("%-18s %-8s " % ("all", mode) + " ".join("%12d" % total[mode][k] for k in KINDS), file=out)
    print("\n%d cases (%d functions of %d libraries)" % (len(cases), len(cases),
                                                          len({c.library for c in cases})), file=out)
    if problems:
        print("\nsilent wrong and crash runs:", file=out)
        for line in sorted(problems, key=lambda s: (s[:13] != "silent wrong ", s)):
            print("  " + line, file=out)
    if bad_cases:
        print("\nbadly chosen cases (fix the case, not capstan):", file=out)
        for line in bad_cases:
            print("  " + line, file=out)
    return counts, refused, problems


def main(argv):
    write = "--no-write" not in argv
    selectors = [a for a in argv if not a.startswith("--")]
    cases = all_cases()
    if selectors:
        cases = [c for c in cases if any(s in c.id for s in selectors)]
    start = time.perf_counter()
    _, refused, _ = survey(cases)
    print("\n%.1f s" % (time.perf_counter() - start))
    if write and not selectors:
        with open(REFUSED, "w") as fh:
            fh.write("# capstan's clear errors in the survey (python -m tests.survey rewrites this file):\n"
                     "# case  mode  entry point: the error's first line\n")
            fh.write("".join(line + "\n" for line in refused))
        print("wrote %s (%d clear errors)" % (os.path.relpath(REFUSED), len(refused)))


if __name__ == "__main__":
    main(sys.argv[1:])
