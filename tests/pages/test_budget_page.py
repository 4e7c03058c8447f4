"""VRAM Budget (AppTest): the explanation of each plan and the version comparison.

Figures by hand (``tests/unit/capacity/test_kv_layout.py``): gemma-2-9b on one H100 at 8,192 tokens, 19,345 blocks
(the planner's figure; 19,187 in issue 11, before issue 16's mechanisms), 513 + 512 = 1,025 blocks per request,
18.87x; gemma-3-12b-it at 131,072 tokens, vLLM 0.9 0.81x against 0.11 3.59x with about the same tokens (106,016 and
105,904).
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30
WHY = "Why these numbers: the KV layout"


def _budget(**params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/budget.py"), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _expander_text(at: AppTest, label_start: str) -> str:
    found = [e for e in at.expander if e.label.startswith(label_start)]
    assert found, [e.label for e in at.expander]
    return "\n".join(m.value for m in found[0].markdown)


def test_explanation_of_gemma_2_9b() -> None:
    at = _budget(model="google/gemma-2-9b", max_model_len="8192", engine_version="0.28.0")
    assert not at.exception
    text = _expander_text(at, WHY).replace("\\", "")  # markdown escapes
    assert "2 KV-cache groups of 21 layers" in text
    assert "19,345 blocks / 1,025 blocks per request = 18.87x" in text
    assert "int(18.8732 × 8,192) = 154,609 tokens" in text
    assert "The longest that fits" in text
    table = next(t for t in at.table if "blocks/request (each group)" in t.value.index).value
    assert table.loc["blocks/request (each group)"].to_dict() == {"sliding window": "513", "full attention": "512"}


def test_two_vllm_versions_say_what_changed() -> None:
    at = _budget(
        scenarios="2",
        model="google/gemma-3-12b-it",
        engine_version="0.9.0",
        **{"s2.model": "google/gemma-3-12b-it", "s2.engine_version": "0.11.0"},
    )
    assert not at.exception
    text = _expander_text(at, "What changed from vLLM 0.9.0 to 0.11.0 (scenarios 1 and 2)").replace("\\", "")
    assert "0.81x → 3.59x (4.4×)" in text
    assert "hybrid KV-cache manager landed" in text


def test_no_comparison_for_different_models_and_no_explanation_for_tgi() -> None:
    at = _budget(scenarios="2", engine="tgi", **{"s2.model": "google/gemma-2-9b", "s2.engine_version": "0.9.0"})
    assert not at.exception
    assert not [e for e in at.expander if e.label.startswith("What changed")]
    assert len([e for e in at.expander if e.label == WHY]) == 1  # scenario 2 (vLLM) only


# --- --max-model-len auto: Llama-3.1-8B-Instruct on an RTX 4090 holds 2,901 blocks (the planner's figure) of one
# full-attention group, so auto resolves to 2,901 x 16 = 46,416 tokens (vLLM v0.12+ _auto_fit_max_model_len) --------


def test_auto_link_says_the_resolved_length_and_launches_with_auto() -> None:
    at = _budget(gpu="rtx-4090", max_model_len="auto")
    assert not at.exception and not at.warning
    assert [s.value for s in at.success] == [
        "Fits — vLLM 0.28.0 (V1 accounting of 0.27+) at max_model_len auto → 46,416 tokens"
    ]
    assert any("--max-model-len auto" in c.value for c in at.code)
    assert at.checkbox(key="w0.max_model_len_auto").value is True
    assert at.text_input(key="w0.max_model_len").value == ""
    assert at.query_params["max_model_len"] == "auto"


def test_auto_for_an_old_vllm_launches_with_the_number() -> None:
    at = _budget(gpu="rtx-4090", max_model_len="-1", engine_version="0.11.0")  # vLLM 0.11 has no auto
    assert not at.exception
    assert any("--max-model-len auto" not in c.value and "--max-model-len 39408" in c.value for c in at.code)


def test_auto_box_sets_and_clears_auto() -> None:
    at = _budget(gpu="rtx-4090", max_model_len="8192")
    at.checkbox(key="w0.max_model_len_auto").check().run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["max_model_len"] == "auto"
    assert "46,416" in at.success[0].value
    at.checkbox(key="w0.max_model_len_auto").uncheck().run(timeout=TIMEOUT_S)
    assert at.query_params["max_model_len"] == "8192"  # the typed length comes back


def test_auto_box_is_vllm_only() -> None:
    at = _budget(engine="tgi")
    assert not at.exception
    assert not [c for c in at.checkbox if c.key == "w0.max_model_len_auto"]


# --- issue 16: the range over the vLLM versions in use, and a deployment across nodes ------------------------------


def test_no_version_says_the_range_in_words() -> None:
    at = _budget(max_model_len="8192")  # Llama-3.1-8B on an H100, no version set
    assert not at.exception
    infos = [i.value for i in at.info if i.value.startswith("vLLM version not set: ")]
    assert infos and "between 421,264 and 452,112 tokens" in infos[0]
    assert "0.14.0 sets the low end, 0.28.0 the high end" in infos[0]
    pinned = _budget(max_model_len="8192", engine_version="0.19.0")
    assert not [i for i in pinned.info if i.value.startswith("vLLM version not set")]


def test_tp16_is_flagged_as_two_nodes() -> None:
    at = _budget(model="meta-llama/Llama-3.1-70B-Instruct", tensor_parallel_size="16", max_model_len="8192")
    assert not at.exception
    warning = next(w.value for w in at.warning if "need 2 nodes" in w.value)
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in warning
    assert "--nnodes 2" in warning


# --- issue 14: speculative decoding and the what-if KV compression --------------------------------------------------

SPEC_LINK = '{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 5}'


def test_a_speculative_link_fills_the_inputs_and_launches_with_it() -> None:
    at = _budget(gpu="h100-sxm-80gb", max_model_len="8192", speculative_config=SPEC_LINK)
    assert not at.exception and not at.error
    assert at.selectbox(key="w0.spec_method").value == "draft_model"
    assert at.text_input(key="w0.spec_model").value == "meta-llama/Llama-3.2-1B-Instruct"
    assert at.text_input(key="w0.spec_tokens").value == "5"
    assert any(f"--speculative-config '{SPEC_LINK}'" in c.value for c in at.code)
    assert at.query_params["speculative_config"] == SPEC_LINK


def test_choosing_eagle3_plans_the_head_and_writes_the_link() -> None:
    at = _budget(gpu="h100-sxm-80gb", max_model_len="8192")
    at.selectbox(key="w0.spec_method").set_value("eagle3").run(timeout=TIMEOUT_S)
    at.text_input(key="w0.spec_model").input("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").run(timeout=TIMEOUT_S)
    at.text_input(key="w0.spec_tokens").input("3").run(timeout=TIMEOUT_S)
    assert not at.exception and not at.error
    assert at.query_params["speculative_config"] == (
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
    )
    at.selectbox(key="w0.spec_method").set_value("off").run(timeout=TIMEOUT_S)
    assert "speculative_config" not in at.query_params


def test_a_draft_method_without_a_model_says_so_in_one_line() -> None:
    at = _budget(gpu="h100-sxm-80gb")
    at.selectbox(key="w0.spec_method").set_value("draft_model").run(timeout=TIMEOUT_S)
    assert not at.exception
    assert [e.value for e in at.error] and "needs a model" in at.error[0].value


def test_kv_compression_is_marked_what_if() -> None:
    at = _budget(gpu="h100-sxm-80gb", max_model_len="8192", kv_compression_ratio="4")
    assert not at.exception
    assert at.text_input(key="w0.kv_compression_ratio").value == "4"
    assert any(c.value.startswith("# what-if KV compression ÷4 is not an engine setting") for c in at.code)


# --- the new-user trial: a verdict that holds in every vLLM version in use, and a target past the model's limit -----


def test_fits_only_in_newer_versions_is_a_warning() -> None:
    # Llama-3.1-8B on an A10 at 34,816 tokens: v0.24+ hold 35,360 tokens, v0.10–v0.21 fewer (v0.14: 28,352)
    at = _budget(gpu="a10", max_model_len="34816")
    assert not at.exception
    assert not [s for s in at.success if s.value.startswith("Fits")]
    warning = next(w.value for w in at.warning if w.value.startswith("Fits only in part"))
    assert "0.21.0 would not start it (it starts in 0.24.0, 0.27.0, 0.28.0)" in warning
    assert any(m.value.startswith("--max-model-len 27648 → ") for m in at.markdown)  # the fix v0.14 starts too


def test_target_past_the_models_limit_is_na() -> None:
    at = _budget(max_model_len="8192", target_context="2000000", engine_version="0.28.0")
    assert not at.exception
    assert [m.value for m in at.metric if m.label == "Concurrency @ 2,000,000"] == ["n/a"]
    assert any("beyond the model's limit of 131,072 tokens" in w.value for w in at.warning)


def test_the_outlook_gives_each_predicted_figure_its_band() -> None:
    at = _budget(gpu="h200-sxm-141gb", max_model_len="8192")
    assert not at.exception
    (outlook,) = [t.value for t in at.table if "TPOT p50 (ms)" in t.value.columns]  # a st.table (pages/budget.py)
    for column in ("TTFT p50 (ms)", "TPOT p50 (ms)", "output tok/s", "tok/s per request"):
        for cell in outlook[column]:
            value, band = cell.removesuffix(")").split(" (")  # "7.2 (5.8–8.0)"
            low, high = (float(x.replace(",", "")) for x in band.split("–"))
            assert low <= float(value.replace(",", "")) <= high, (column, cell)
    assert any("In parentheses: the predictor's error band for dense models by load" in c.value for c in at.caption)
