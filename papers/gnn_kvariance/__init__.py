"""k-variance generalisation bound for GNNs in the space of an expressivity upper bound
(Li, Geerts, Kim & Wang, "Towards Bridging Generalization and Expressivity of Graph Neural
Networks", ICLR 2025)."""
