"""One subpackage per paper; none imports another.

Importing ``papers`` (as ``python -m papers.<slug>.train`` does first) pins the floating-point
code path before the paper loads numpy or torch: see :mod:`shared.floatpath`.
"""

import shared  # noqa: F401  (its import applies the float-path pin)
