"""Run a script of examples/ as a user would: in a fresh working directory, with a
private temporary directory (``TMPDIR``), and check that it leaves nothing behind
in either -- no stray output files, no temporary folders."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *args, timeout=300):
    """``python examples/NAME ARGS...``'s standard output, once it exited with status 0
    and left its working and temporary directories as empty as it found them."""
    with tempfile.TemporaryDirectory() as private:
        cwd, tmp = os.path.join(private, "cwd"), os.path.join(private, "tmp")
        os.mkdir(cwd)
        os.mkdir(tmp)
        env = {**os.environ, "TMPDIR": tmp, "TEMP": tmp, "TMP": tmp}
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                              capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
        assert proc.returncode == 0, proc.stderr
        left = sorted(os.listdir(cwd)) + sorted(os.listdir(tmp))
        assert not left, "examples/%s left %s behind" % (name, left)
    return proc.stdout
