"""PPI-ATE: confidence intervals for average treatment effects from multiple data sets."""
