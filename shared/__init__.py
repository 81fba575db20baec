"""Plumbing shared by the paper packages: entry point, configs, seeding, runtime, loop,
logging, run records, claims and plots. Nothing in here is a paper's method."""
