"""EM-LLM: human-inspired episodic memory for infinite-context LLMs (arXiv 2407.09450)."""
