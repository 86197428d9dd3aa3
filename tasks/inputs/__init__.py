"""The inputs: files and tables read, staged and joined in DuckDB, SQL, partitions, proxy attributes, demo data."""
