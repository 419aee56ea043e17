"""Interop tests against the official a2a-sdk, which runs in its own venv (see sdk_env.py)."""
