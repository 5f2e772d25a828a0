"""Shared test settings."""

import os

from hypothesis import settings

# CI gets a fixed sequence of examples, so that a run is reproducible; locally,
# hypothesis explores new examples each time.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
