"""MatryoshkaKV (Lin et al., ICLR 2025), arXiv 2410.14731."""
