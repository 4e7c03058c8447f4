"""LLM Serving Planner: the router. Pages live in ``pages/``, logic in ``planner/``."""

from pathlib import Path

import streamlit as st

# A local icon: a material-symbol page icon is fetched from fonts.gstatic.com, which fails offline.
ICON = Path(__file__).parent / "docs" / "favicon.png"
st.set_page_config(page_title="LLM Serving Planner", page_icon=str(ICON), layout="wide")

st.sidebar.markdown("### LLM Serving Planner")
st.sidebar.caption("How much GPU memory a model needs to serve, and how many requests fit.")

st.navigation(
    [
        st.Page("pages/budget.py", title="VRAM Budget", icon=":material/memory:", default=True),
        st.Page("pages/concurrency.py", title="Concurrency vs Context", icon=":material/show_chart:"),
        st.Page("pages/performance.py", title="Performance", icon=":material/trending_up:"),
        st.Page("pages/sizing.py", title="Sizing", icon=":material/attach_money:"),
        st.Page("pages/fleet.py", title="Fleet", icon=":material/hub:"),
        st.Page("pages/compare.py", title="Live Compare", icon=":material/compare_arrows:"),
        st.Page("pages/loadtest.py", title="Load Test", icon=":material/speed:"),
    ]
).run()
