"""AdamCB: "Adam Optimization with Adaptive Batch Selection".

Kim & Oh, ICLR 2025, arXiv 2512.06795.
"""
