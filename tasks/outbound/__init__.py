"""What leaves the run: Prefect events, report e-mails, MLflow registry reads and write-backs, registration events."""
