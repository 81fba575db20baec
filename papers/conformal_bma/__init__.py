"""CBMA: conformal prediction through Bayesian model averaging (ICLR 2025)."""
