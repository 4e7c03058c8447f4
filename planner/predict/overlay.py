"""Predictions beside measured runs: the same workload as each measured (or imported) run, predicted for the
deployment it measured, and a recalibration of the coefficients on those runs.

* :func:`predict_runs`: for each measured run, the workload it ran (:func:`planner.predict.calibration.calibration_run`:
  its requests, concurrency, rate and burstiness, and its mean input and output lengths) predicted on a scenario
  (:func:`planner.predict.api.predict`), as a :class:`~planner.loadtest.results.SavedRun` with ``source="predicted"``
  and the measured run's sweep id, so tables, figures and exports treat it as they treat the measured one
  (:func:`planner.loadtest.charts.sweep_curves` pairs it with its sweep).
* :func:`recalibrate`: least-squares fit of the coefficients on the measured runs
  (:func:`planner.predict.calibration.fit`), their error before and after, and the profile to save.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun
from planner.predict.api import DEFAULT_SOURCE, planned_shape, predict, predicted_run
from planner.predict.band import PredictionBand
from planner.predict.calibration import (
    CalibrationProfile,
    CalibrationRun,
    Fit,
    RunScore,
    calibration_run,
    fit,
    prefix_cache_refusal,
    score,
)
from planner.predict.shape import StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS

__all__ = ["Overlay", "Recalibration", "predict_runs", "recalibrate"]


@dataclass(frozen=True)
class Overlay:
    """Measured runs and their predictions.

    Attributes:
        pairs: ``(measured, predicted)`` for every run that could be predicted, in the order given.
        skipped: one line per run left out, saying why (no completed request, longer than ``max_model_len``, …).
        calibration: where the coefficients come from, in words.
        notes: what a reader of the predictions must know (once each).
        bands: each prediction's error band (:class:`~planner.predict.band.PredictionBand`), in the order of
            ``pairs``; () when none was computed.
    """

    pairs: tuple[tuple[SavedRun, SavedRun], ...]
    skipped: tuple[str, ...]
    calibration: str
    notes: tuple[str, ...] = ()
    bands: tuple[PredictionBand | None, ...] = ()

    @property
    def predicted(self) -> tuple[SavedRun, ...]:
        """The predicted runs, in order."""
        return tuple(p for _, p in self.pairs)


@dataclass(frozen=True)
class Recalibration:
    """A fit of the coefficients on measured runs.

    Attributes:
        fit: the fitted coefficients and their error on each run (``fit.scores``).
        before: the error of the default coefficients on the same runs.
        profile: the profile to save (``profile.to_json()``) and to predict with.
        skipped: one line per run left out, saying why.
    """

    fit: Fit
    before: tuple[RunScore, ...]
    profile: CalibrationProfile
    skipped: tuple[str, ...] = ()


def _calibration_runs(runs: Sequence[SavedRun], shape: StepShape) -> tuple[list[CalibrationRun], list[str]]:
    """The measured runs as calibration runs (predicted runs are not measurements); the others with why."""
    usable, skipped = [], []
    for run in runs:
        if run.source == "predicted":
            continue
        try:
            usable.append(calibration_run(run, shape))
        except InvalidParameterError as exc:
            skipped.append(f"{run.label}: {exc}")
    return usable, skipped


def predict_runs(
    scenario: Scenario,
    runs: Sequence[SavedRun],
    *,
    profile: CalibrationProfile | None = None,
    plan: Plan | None = None,
    spec: ModelSpec | None = None,
) -> Overlay:
    """Predict the workload of each measured run on ``scenario``.

    Args:
        scenario: the deployment the runs measured (vLLM).
        runs: measured or imported runs; predicted ones among them are ignored.
        profile: calibrated coefficients; None = the defaults.
        plan: the scenario's plan when the caller has it already.
        spec: the model, when it is not resolved from ``scenario.model``.

    Returns:
        The pairs, labelled ``predicted · <measured label>``, each prediction's error band, and the runs left out
        with why.

    Raises:
        InvalidParameterError: the engine is not vLLM, the scenario does not fit (with the planner's reason), or its
            GPU lacks a bandwidth or TFLOPS figure.
        PlannerError: from planning.
    """
    result, shape = planned_shape(scenario, plan=plan, spec=spec)
    usable, skipped = _calibration_runs(runs, shape)
    measured = {r.label: r for r in runs}
    pairs, bands = [], []
    notes: dict[str, None] = {}
    calibration = DEFAULT_SOURCE
    for run in usable:
        try:
            prediction = predict(scenario, run.settings, profile=profile, plan=result, spec=spec)
        except InvalidParameterError as exc:
            skipped.append(f"{run.label}: {exc}")
            continue
        calibration = prediction.calibration
        notes.update(dict.fromkeys(n for n in prediction.notes if not n.startswith("the KV cache filled")))
        source = measured[run.label]
        pairs.append((source, predicted_run(prediction, f"predicted · {source.label}", sweep=source.sweep)))
        bands.append(prediction.band)
    return Overlay(tuple(pairs), tuple(skipped), calibration, tuple(notes), tuple(bands))


def recalibrate(
    scenario: Scenario,
    runs: Sequence[SavedRun],
    *,
    plan: Plan | None = None,
    spec: ModelSpec | None = None,
) -> Recalibration:
    """Fit the step coefficients to the measured ``runs`` of the deployment ``scenario``.

    Args:
        scenario: the deployment the runs measured (vLLM).
        runs: measured or imported runs (predicted ones are ignored), each with completed requests and TPOT/TTFT;
            one served mostly from the prefix cache is left out with why
            (:func:`~planner.predict.calibration.prefix_cache_refusal`).
        plan: the scenario's plan when the caller has it already.
        spec: the model, when it is not resolved from ``scenario.model``.

    Returns:
        The fit, the default coefficients' error on the same runs and the profile.

    Raises:
        InvalidParameterError: as :func:`predict_runs`, or no run can be fitted (the message says why).
    """
    _, shape = planned_shape(scenario, plan=plan, spec=spec)
    refused = [(run, prefix_cache_refusal(run)) for run in runs]
    usable, skipped = _calibration_runs([run for run, why in refused if why is None], shape)
    skipped = [f"{run.label}: {why}" for run, why in refused if why is not None] + skipped
    if not usable:
        why = f" ({'; '.join(skipped)})" if skipped else ""
        raise InvalidParameterError("runs", len(runs), f"at least one measured run with TPOT and TTFT{why}")
    fitted = fit(usable)
    profile = CalibrationProfile.from_fit(fitted, usable, engine_version=scenario.engine_version)
    return Recalibration(fitted, score(usable, DEFAULT_COEFFICIENTS), profile, tuple(skipped))
