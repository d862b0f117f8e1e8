"""The towns bundled with Machi, one JSON file each (see README.md here and backend/transfer/demo.py)."""
