"""Virtual environments the benchmarks make for their anchors (anchors.py,
ipex.py): made with this interpreter's venv module, filled with pip, never
touching the system's Python."""
import os
import subprocess
import sys

from .report import error


def install(venv, packages, what):
    """pip-installs packages into venv (made first if it has no pip). True on
    success; a failure is reported as "could not install <what>" and gives
    False. pip's progress goes to the terminal."""
    try:
        if not os.path.exists(os.path.join(venv, "bin", "pip")):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--progress-bar", "off", *packages], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        error(f"could not install {what}: {e}")
        return False
    return True
