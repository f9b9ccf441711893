"""Ray for the tests of the optional extra: skip with a reason when it is absent (the module-scoped
``ray_cluster`` fixture is in conftest.py)."""

from __future__ import annotations

import pytest

try:
    import ray
except ImportError:  # the optional extra
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason="Ray is an optional extra (pip install -e '.[ray]'); make test "
                               "installs it")

