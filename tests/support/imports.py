"""What a fresh interpreter has imported after running some code: for the tests that keep
imports light."""

import subprocess
import sys
from collections.abc import Collection


def loaded_after(code: str, names: Collection[str]) -> list[str]:
    """Which of the modules `names` a fresh interpreter has imported after running `code`,
    sorted (a module's import imports its package: a package's name tells of any of its)."""
    report = f"import sys\nprint('loaded:', *sorted(set(sys.modules) & {set(names)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    [line] = [line for line in done.stdout.splitlines() if line.startswith("loaded:")]
    return line.split()[1:]
