"""SPA: Spread Preference Annotation (ICLR 2025), toy and paper-scale reimplementation."""
