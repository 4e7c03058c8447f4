"""The request a client sends: :class:`~planner.serving.requests.ChatRequest` validation and the bodies built per
endpoint kind.
"""

from __future__ import annotations

import pytest

from planner.serving.requests import ChatRequest


@pytest.mark.parametrize("bad", [{"prompt": " "}, {"prompt": "x", "max_tokens": 0}, {"prompt": "x", "top_p": 0}])
def test_chat_request_validation(bad):
    from planner.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        ChatRequest(**bad)
