"""Page-test fixtures: Streamlit's in-process caches start empty in every test.

``st.cache_data`` lives in the test process, so a model one test resolved from its Hub stand-in would
otherwise answer the next test, whose stand-in (or offline environment) may say something else; so do the memos the
pages share across sessions (``pages._cache.remembered``, an ``st.cache_resource``).
"""

from __future__ import annotations

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _fresh_streamlit_caches() -> None:
    st.cache_data.clear()
    st.cache_resource.clear()
