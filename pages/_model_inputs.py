"""The model inputs of a scenario editor column beside its model box: a pasted or uploaded config.json, and the
speculative-decoding draft. Not a page.

:func:`config_input` copies an upload into its text area (so it can be edited and survives page switches,
:func:`pages._editor_memory.config_text`); while the text area holds a config, the scenario's model is its label
(:func:`planner.views.model.upload_label`). :func:`speculative_input` keeps the configuration its widgets make under
the scenario field's own key, so a link's other vLLM keys survive unedited.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

from pages._cache import UPLOADS_KEY, refuse_upload
from pages._editor_memory import config_text, set_config_text, widget_key
from pages._numbers import number_box
from planner.capacity.speculative import MAX_SPECULATIVE_TOKENS
from planner.catalog.hub import model_from_config
from planner.errors import PlannerError
from planner.values import parse_number
from planner.views.editor import (
    DEFAULT_SPECULATIVE_TOKENS,
    SPEC_METHOD,
    SPEC_MODEL,
    SPEC_OFF,
    SPEC_TOKENS,
    config_from_upload,
    needs_draft_model,
    speculative_config,
    speculative_methods,
)
from planner.views.model import upload_label

__all__ = ["config_input", "speculative_input"]


def config_input(index: int) -> str | None:
    """The "Use a config.json instead" expander of column ``index``: the label of the config pasted there (the model
    the scenario plans), or ``None`` when there is none.

    A parsed config is registered in :data:`pages._cache.UPLOADS_KEY` under its label. A refused one keeps its text
    and its label, and is remembered with its error (:func:`pages._cache.refuse_upload`): the scenario's verdict
    says, once, why it is not planned, instead of planning the model box's model as if it had been meant.
    """
    text_key, file_key, seen_key = (widget_key(index, n) for n in ("config_text", "config_file", "config_seen"))
    if text_key not in st.session_state:  # dropped on another page: restore what was pasted
        st.session_state[text_key] = config_text(index)
    with st.expander("Use a config.json instead", expanded=bool(st.session_state[text_key].strip())):
        upload = st.file_uploader(
            "Upload config.json",
            type=["json"],
            key=file_key,
            max_upload_size=1,  # MB; real config.json files are a few KiB
            help="Copied into the text below, where you can edit it.",
        )
        if upload is not None and upload.file_id != st.session_state.get(seen_key):
            st.session_state[seen_key] = upload.file_id  # copy each upload once; later edits of the text win
            text, why = config_from_upload(upload.getvalue())
            if text is None:
                st.error(f"{upload.name} was not read: {why}")
            else:
                st.session_state[text_key] = text
        st.text_area(
            "…or paste it",
            key=text_key,
            height=160,
            placeholder='{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, ...}',
            help="The model's config.json from the Hub or a local checkpoint. Clear it to use the model box.",
        )
        text = st.session_state[text_key]
        set_config_text(index, text, widget=False)
        if not text.strip():
            return None
        label = upload_label(text)
        try:
            resolved = model_from_config(text, label=label)
        except PlannerError as exc:
            refuse_upload(label, exc)
            st.caption(":material/arrow_upward: Not planned: the verdict at the top of the page says why.")
            return label
        st.session_state[UPLOADS_KEY] = {**st.session_state.get(UPLOADS_KEY, {}), label: resolved}
        st.caption(
            f"Planned as **{label}**. The link carries this name only, not the config: whoever opens it "
            "needs the same config.json pasted here."
        )
        return label


def speculative_input(k: Callable[[str], str], engine: str) -> None:
    """The "Speculative decoding" expander: method, draft model and tokens; the configuration they make (or None) is
    stored under the ``speculative_config`` key, and a bad one gives one error line and is not planned."""
    methods = speculative_methods(engine)
    if st.session_state.get(k(SPEC_METHOD)) not in methods:
        st.session_state[k(SPEC_METHOD)] = SPEC_OFF  # a vLLM method under TGI: TGI has n-gram only
    with st.expander("Speculative decoding", expanded=st.session_state[k(SPEC_METHOD)] != SPEC_OFF):
        method = st.selectbox(
            "Method" if engine == "vllm" else "--speculate",
            methods,
            key=k(SPEC_METHOD),
            help="vLLM's --speculative-config method: a draft model, an EAGLE / EAGLE-3 head, the model's own MTP "
            "layers, or n-gram prompt lookup (no memory). TGI: --speculate N (n-gram or the checkpoint's Medusa).",
        )
        needs_model = needs_draft_model(method)
        model = st.text_input(
            "Draft model or head",
            key=k(SPEC_MODEL),
            disabled=not needs_model,
            placeholder="meta-llama/Llama-3.2-1B-Instruct" if needs_model else "not used by this method",
            help="A catalog id (meta-llama/Llama-3.2-1B-Instruct, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) or any Hugging "
            "Face repo id.",
        )
        tokens = number_box(
            "num_speculative_tokens",
            k(SPEC_TOKENS),
            partial(parse_number, low=1, high=MAX_SPECULATIVE_TOKENS, integer=True),
            default=DEFAULT_SPECULATIVE_TOKENS,
        )
        config, error = speculative_config(method, model, tokens, st.session_state.get(k("speculative_config")))
        if error:
            st.error(error)
        st.session_state[k("speculative_config")] = config
