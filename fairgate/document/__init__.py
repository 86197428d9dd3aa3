"""The audit document: the versioned JSON result and its schema."""
