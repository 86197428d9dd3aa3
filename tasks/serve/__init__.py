"""fairgate explore: the read-only web app over the audit trail (tasks/serve/explore_app.py)."""
