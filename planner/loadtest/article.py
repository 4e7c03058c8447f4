"""The source article's load: its eight prompts and its throughput benchmark's defaults.

The article ("LLM Inference Optimization Part 4 — Production Serving", facts restated in the project's
``shared/reference/article.md``) sends eight short prompts at once (``asyncio.gather``, ``max_tokens=256``) in its
continuous-batching demo, and its ``benchmark_throughput`` sends 100 non-streaming chat completions, at most 16 in
flight (a semaphore), each "Write a detailed explanation about: " followed by the word "token" 128 times, with
``max_tokens=256`` and temperature 0.7.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.loadtest.settings import LoadSettings

__all__ = ["ARTICLE_BENCHMARK", "ARTICLE_PROMPTS", "ArticleBenchmark", "article_benchmark_settings"]

#: The article's eight prompts (its continuous-batching demo), in its order.
ARTICLE_PROMPTS: tuple[str, ...] = (
    "What is Python?",
    "Write a haiku about AI.",
    "Explain gravity in one sentence.",
    "List 5 programming languages.",
    "What is the speed of light?",
    "Describe photosynthesis briefly.",
    "What is machine learning?",
    "Name 3 planets.",
)


@dataclass(frozen=True)
class ArticleBenchmark:
    """The article's ``benchmark_throughput`` defaults.

    Attributes:
        num_requests: requests sent (100).
        concurrency: requests in flight at most (16).
        input_words: the word "token" repeated this many times after ``prompt_prefix`` (128).
        output_tokens: ``max_tokens`` (256).
        temperature: sampling temperature (0.7).
        prompt_prefix: the text before the repeated word.
        streaming: the article's requests are non-streaming.
    """

    num_requests: int = 100
    concurrency: int = 16
    input_words: int = 128
    output_tokens: int = 256
    temperature: float = 0.7
    prompt_prefix: str = "Write a detailed explanation about: "
    streaming: bool = False

    @property
    def prompt(self) -> str:
        """The article's prompt: the prefix and "token" repeated ``input_words`` times."""
        return self.prompt_prefix + " ".join(["token"] * self.input_words)


#: The article's throughput benchmark, as data.
ARTICLE_BENCHMARK = ArticleBenchmark()


def article_benchmark_settings() -> LoadSettings:
    """The article's benchmark as Load Test settings: 100 requests, 16 in flight, its own prompt (the ``custom``
    dataset, so the server's tokenizer decides the real count of the article's "128 input tokens"), 256 output tokens,
    bounded by requests only (no duration)."""
    b = ARTICLE_BENCHMARK
    return LoadSettings(
        num_prompts=b.num_requests,
        max_concurrency=b.concurrency,
        duration_s=None,
        dataset_name="custom",
        prompts=(b.prompt,),
        output_len=b.output_tokens,
    )
