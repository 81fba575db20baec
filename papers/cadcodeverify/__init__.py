"""CADCodeVerify: generating CAD code with vision-language models (Alrashedy et al., ICLR 2025)."""
