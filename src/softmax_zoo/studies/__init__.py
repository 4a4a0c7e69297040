"""Self-contained numerical studies with their own small training loops (records -> reports/)."""
