"""The langgraph face (optional extra)."""
