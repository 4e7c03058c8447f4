"""What the planner knows about the world: model specs (``config.json`` form), the model and GPU catalogs
(``data/``, a source per figure), Hugging Face Hub resolution, presets and launch commands.

May import :mod:`planner.capacity` (parameter counts, scenarios and plans for presets and launch commands),
:mod:`planner.errors` and :mod:`planner.units`; never serving, load-test or link code.
"""
