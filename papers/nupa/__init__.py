"""NUPA: Number Cookbook (Yang et al., ICLR 2025), arXiv 2411.03766."""
