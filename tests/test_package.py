"""What importing the package pulls in."""

import subprocess
import sys
import textwrap


def test_star_import_brings_the_computations_without_matplotlib_or_ipywidgets():
    # A fresh interpreter: this test process may have imported the drawing stack already.
    script = textwrap.dedent(
        """
        import sys
        from attention_lib import *
        assert callable(attention_forward) and callable(masked_softmax)
        heavy = sorted(m for m in ("matplotlib", "ipywidgets") if m in sys.modules)
        print(",".join(heavy))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"star import loaded {result.stdout.strip()}"
