"""LucidPPN (ICLR 2025, arXiv 2405.14331): prototypical parts with a separate colour branch."""
