"""Shareable links: the URL reading policy (:mod:`planner.links.rules`), the one codec of a settings dataclass
derived from its fields' declarations (:mod:`planner.links.codec`, :mod:`planner.fields`), the scenario codec
(:mod:`planner.links.budget`) and one module per page naming its codec (encode and decode only).

May import the settings types of the other packages, the ground floor (:mod:`planner.errors`, :mod:`planner.values`,
:mod:`planner.fields`) and the catalog's model-id rule; holds no domain logic. Nothing below it imports it: text rules
live on the ground floor (:mod:`planner.values`).
"""
