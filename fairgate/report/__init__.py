"""The report's view model: formatting, suppression and e-mail text (no Jinja here)."""
