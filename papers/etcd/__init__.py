"""ETCD: efficient and trustworthy causal discovery with latent variables (Li & Liu, ICLR 2025)."""
