"""Streamlit glue shared by the pages: URL/session state and the scenario editor.

This package may import streamlit; the computing lives in ``planner``.
"""
