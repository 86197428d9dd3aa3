"""Prefect tasks: small adapters around the engine. All I/O of an audit lives here."""
