"""T2V-Turbo-v2 (ICLR 2025): consistency distillation with reward feedback and motion guidance."""
