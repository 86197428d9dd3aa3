"""Prefect flows: recipes of task calls."""
