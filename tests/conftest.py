"""Shared pytest setup: a Hypothesis profile that does not flake on busy CI machines.

Profile "ci" (loaded by default; choose another with HYPOTHESIS_PROFILE=default):
Hypothesis' own CI settings (derandomized, so every run tries the same examples, no
example database) plus no per-example deadline, since the 200 ms default trips on
two shared cores, and print_blob so a failure can be replayed with @reproduce_failure.
"""

import os

from hypothesis import settings

settings.register_profile("ci", settings.get_profile("ci"), deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
