"""planner/views/message.py."""

from __future__ import annotations

import dataclasses

import pytest

from planner.views.message import Message


def test_a_message_is_frozen_and_compares_by_value():
    message = Message("warning", "Scenario 2 does not fit")
    assert message == Message("warning", "Scenario 2 does not fit")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "x"  # type: ignore[misc]
