"""Workload files: ShareGPT conversations and request traces (Mooncake JSONL, BurstGPT CSV), read lazily, and a
malformed file of each kind rejected by line and field."""

from __future__ import annotations

import io

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.datasets import TraceRow, read_sharegpt, read_trace
from planner.loadtest.workload import parse_prompts_jsonl

SHAREGPT = """[
  {"id": "a", "conversations": [{"from": "human", "value": "Hi there"}, {"from": "gpt", "value": "Hello"}]},
  {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},
  {"id": "c", "conversations": [{"from": "human", "value": "Second"}, {"from": "gpt", "value": "ok"},
                                {"from": "human", "value": "more"}]}
]"""
# the first lines of Mooncake's conversation trace (kvcache-ai/Mooncake FAST25-release/traces), shortened hash lists
MOONCAKE = (
    '{"timestamp": 0, "input_length": 40, "output_length": 12, "hash_ids": [0, 1, 2]}\n'
    '{"timestamp": 27, "input_length": 20, "output_length": 5, "hash_ids": [0, 1]}\n'
)
# BurstGPT's CSV header and row shape (HPMLL/BurstGPT data/BurstGPT_1.csv)
BURSTGPT = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,0,1087,Conversation log\n"
    "118,GPT-4,417,276,693,API log\n"
)


def test_sharegpt_takes_the_first_human_turn_of_conversations_with_an_answer():
    # vLLM's ShareGPTDataset: entries with at least two turns, conversations[0]["value"] as the prompt
    assert read_sharegpt(SHAREGPT) == ("Hi there", "Second")
    jsonl = (
        '{"conversations": [{"from": "human", "value": "Hi there"}, {"from": "gpt", "value": "Hello"}]}\n'
        '{"conversations": [{"from": "human", "value": "alone"}]}\n'
    )
    assert read_sharegpt(jsonl) == ("Hi there",)


def test_files_are_read_only_as_far_as_needed():
    class Counting(io.BytesIO):
        read_bytes = 0

        def read(self, size=-1):
            data = super().read(size)
            Counting.read_bytes += len(data)
            return data

    entry = '{"conversations": [{"value": "p"}, {"value": "a"}]}'
    body = ("[" + ",\n".join([entry] * 50_000) + "]").encode()
    assert read_sharegpt(Counting(body), limit=3) == ("p", "p", "p")
    assert Counting.read_bytes <= 2 * 65_536 < len(body)  # one or two 64 KiB pieces of a 2.6 MB file
    rows = read_trace(
        io.BytesIO((MOONCAKE * 10_000).encode().replace(b'"timestamp": 27', b'"timestamp": 0')), "timed_trace", limit=2
    )
    assert len(rows) == 2


def test_mooncake_trace_rows():
    assert read_trace(MOONCAKE, "timed_trace") == (
        TraceRow(0.0, 40, 12, (0, 1, 2)),
        TraceRow(27.0, 20, 5, (0, 1)),
    )


def test_burstgpt_rows_skip_failed_requests():
    # a row with 0 response tokens is a failed request (vLLM's BurstGPTDataset drops them as well)
    assert read_trace(BURSTGPT, "burstgpt") == (TraceRow(5.0, 472, 18), TraceRow(118.0, 417, 276))


@pytest.mark.parametrize(
    ("reader", "text", "where", "field"),
    [
        # custom JSONL (vLLM's custom dataset): line 2 has no prompt
        (parse_prompts_jsonl, '{"prompt": "a"}\n{"output_tokens": 3}\n', "dataset line 2", "output_tokens"),
        # ShareGPT: the entry starting on line 3 has no conversations list
        (
            read_sharegpt,
            '[\n {"conversations": [{"value": "a"}, {"value": "b"}]},\n {"id": 3}\n]',
            "dataset line 3",
            "conversations",
        ),
        # ShareGPT: a first turn without a string value
        (
            read_sharegpt,
            '{"conversations": [{"value": "a"}, {}]}\n{"conversations": [{"value": 7}, {}]}\n',
            "dataset line 2",
            "conversations[0].value",
        ),
        # ShareGPT: not JSON on line 2
        (
            read_sharegpt,
            '[{"conversations": [{"value": "a"}, {}]},\n{"conversations": [}]',
            "dataset line 2",
            "Expecting value",
        ),
        # Mooncake: output_length missing on line 2
        (
            lambda t: read_trace(t, "timed_trace"),
            MOONCAKE.replace('"output_length": 5, ', ""),
            "dataset line 2",
            "output_length",
        ),
        # Mooncake: too few blocks for the input length (3 blocks of 16 tokens for 60)
        (
            lambda t: read_trace(t, "timed_trace"),
            MOONCAKE.replace('"input_length": 40', '"input_length": 60'),
            "dataset line 1",
            "hash_ids",
        ),
        # Mooncake: a timestamp that is not a number
        (
            lambda t: read_trace(t, "timed_trace"),
            MOONCAKE.replace('"timestamp": 27', '"timestamp": "x"'),
            "dataset line 2",
            "timestamp",
        ),
        # BurstGPT: line 4 has a request token count that is not a number
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("417", "many"), "dataset line 4", "Request tokens"),
        # BurstGPT: a header without the columns
        (lambda t: read_trace(t, "burstgpt"), "time,model\n1,x\n", "dataset line 1", "Timestamp"),
        # a trace going back in time
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("118,", "1,"), "dataset row 2", "Timestamp"),
        # issue 24 (hostile-file suite): numbers float() reads but no trace writer means. "١٢٨" (Arabic-Indic
        # digits) was read as 128 request tokens, "1_7" as 17
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("417", "١٢٨"), "dataset line 4", "Request tokens"),
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("276", "2_76"), "dataset line 4", "Response tokens"),
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("118,", "infinity,"), "dataset line 4", "Timestamp"),
        # ... a row asking for more tokens than any model takes (a run would build a prompt of 6e16 tokens)
        (lambda t: read_trace(t, "burstgpt"), BURSTGPT.replace("417", "6.2e16"), "dataset line 4", "Request tokens"),
        (
            lambda t: read_trace(t, "timed_trace"),
            MOONCAKE.replace('"input_length": 20', '"input_length": 20000000000').replace(', "hash_ids": [0, 1]', ""),
            "dataset line 2",
            "input_length",
        ),
        # ... and a timestamp too large for a float (it raised OverflowError)
        (
            lambda t: read_trace(t, "timed_trace"),
            MOONCAKE.replace('"timestamp": 27', '"timestamp": 1' + "0" * 400),
            "dataset line 2",
            "timestamp",
        ),
    ],
)
def test_a_malformed_file_of_each_kind_is_rejected_by_line_and_field(reader, text, where, field):
    with pytest.raises(InvalidParameterError) as info:
        reader(text)
    message = str(info.value)
    assert message.startswith(where) and field in message and "\n" not in message


def test_not_utf8_and_empty_files():
    with pytest.raises(InvalidParameterError, match="UTF-8"):
        read_sharegpt(b"\xff\xfe[")
    with pytest.raises(InvalidParameterError, match="no conversation"):
        read_sharegpt("[]")
    with pytest.raises(InvalidParameterError, match="no request"):
        read_trace("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n", "burstgpt")
    with pytest.raises(InvalidParameterError, match="layout"):
        read_trace(MOONCAKE, "azure")
