"""LiMAC: Lightweight Neural App Control (ICLR 2025), toy and paper-scale reimplementation."""
