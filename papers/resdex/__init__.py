"""ResDex (ICLR 2025): residual mixture-of-experts policies for universal dexterous grasping."""
