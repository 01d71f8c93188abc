"""Where results live: the results database (SQLite or PostgreSQL), its schema, checks,
copies and exports."""
