"""What the planner knows about the world, as data and look-ups: model specs (``config.json`` form) and their
parameter counts (``params``), the model and GPU catalogs (``data/``, a source per figure) and Hugging Face Hub
resolution.

May import :mod:`planner.errors`, :mod:`planner.parsing` and :mod:`planner.units` only: nothing that plans (the
presets and launch commands built on plans are in :mod:`planner.capacity`), never serving, load-test or link code.
"""
