"""Shareable links: the URL codec rules and one codec per page's settings (encode and decode only).

May import the settings types of the other packages and :mod:`planner.errors`; holds no domain logic.
:mod:`planner.links.rules` imports nothing from ``planner``, so a domain settings module may use its parsers.
"""
