"""Pydantic models of the policy YAML, one module per section."""
