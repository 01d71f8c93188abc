"""Reports: terminal tables, HTML, CSV/JSON export."""
