"""ControlAR (ICLR 2025): conditional decoding for controllable AR image generation."""
