"""Page views: what each page shows, as frozen dataclasses of text, tables and figures, so a page only reads its
widgets, calls its view and draws the result.

The top floor of ``planner/``: a view composes the packages below it (capacity, catalog, predict, compare, serving,
links) and nothing in ``planner/`` imports a view; only ``pages/`` does. Numbers become text through
:mod:`planner.display` alone. One module per page, named after it, and one per part that several pages share:

========================  ==================================================================================
module                    what it holds
========================  ==================================================================================
``budget``                VRAM Budget: each scenario's verdict, figures, explanation, fixes and details
``concurrency``           Concurrency vs Context: the range slider's choices, the chart, its captions and table
``performance``           Performance: the workload, what is predicted, the predicted curves as shown
``compare``               Live Compare: the live columns, the final metrics and the run history
``editor``                the scenario editor's logic: fields per engine, widget values, the scenario they hold
``model``                 a resolved model's details, and the name a pasted config.json is planned under
``endpoints``             the endpoint pages' discovery table and empty state
``loadtest``              Load Test: the settings its widgets hold, the planned runs, the live panel, the history
``loadtest_results``      Load Test's results area: runs table and chart, sections, sweeps, planned-vs-measured KV
``sizing``                Sizing: the settings, prices, the answer, the ranked table and the Pareto views
``message``               a line shown in a coloured box (error, warning, info, success)
========================  ==================================================================================

May import every package of ``planner/`` but :mod:`planner.cli` (floor 10 of docs/architecture.md):
:mod:`planner.links`, :mod:`planner.sizing`, :mod:`planner.predict`, :mod:`planner.compare`, :mod:`planner.loadtest`,
:mod:`planner.capacity`, :mod:`planner.metrics`, :mod:`planner.catalog`, :mod:`planner.serving` and the ground floor;
never streamlit.
"""
