"""Validation: the Great Expectations suites of every kind's inputs."""
