"""Plumbing shared by the paper packages: entry point, configs, seeding, runtime, loop,
logging, run records, claims and plots. Nothing in here is a paper's method.

Importing ``shared`` pins the floating-point code path (:mod:`shared.floatpath`) before any
module of it loads numpy or torch.
"""

from shared import floatpath

floatpath.apply()
