"""The llamaindex face (optional extra)."""
