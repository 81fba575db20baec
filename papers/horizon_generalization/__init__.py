"""Horizon Generalization in RL (Myers, Ji & Eysenbach, ICLR 2025): toy reproduction."""
