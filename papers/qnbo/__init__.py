"""qNBO: quasi-Newton meets bilevel optimization (Fang et al., ICLR 2025)."""
