"""Mitigation: advice today; the mitigation algorithms later."""
