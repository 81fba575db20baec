"""InfoAlign: learning molecular representation in a cell (Liu et al., ICLR 2025)."""
