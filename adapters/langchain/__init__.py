"""The langchain face (optional extra)."""
