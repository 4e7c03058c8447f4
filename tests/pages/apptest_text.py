"""Helpers shared by the page tests (AppTest)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

__all__ = ["page_text"]


def page_text(at: AppTest) -> str:
    """Every element's protobuf as text (labels, values, markdown, tables, download buttons), plus tables as CSV:
    what a planted secret must never appear in."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    out += [df.value.to_csv() for df in at.dataframe]
    out += [table.value.to_csv() for table in at.table]
    return "\n".join(out)
