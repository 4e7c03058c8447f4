"""The source article's load as data: its benchmark defaults (tests/data/article.md: 100 requests, 16
concurrent, 128 "token" words after "Write a detailed explanation about: ", 256 output tokens) and eight prompts."""

from __future__ import annotations

from planner.loadtest.article import ARTICLE_BENCHMARK, ARTICLE_PROMPTS, article_benchmark_settings


def test_the_articles_eight_prompts() -> None:
    assert len(ARTICLE_PROMPTS) == 8
    assert ARTICLE_PROMPTS[1] == "Write a haiku about AI."


def test_the_articles_benchmark_defaults() -> None:
    b = ARTICLE_BENCHMARK
    assert (b.num_requests, b.concurrency, b.input_words, b.output_tokens, b.temperature) == (100, 16, 128, 256, 0.7)
    assert b.prompt.startswith("Write a detailed explanation about: token token")
    assert b.prompt.count("token") == 128


def test_the_benchmark_as_load_test_settings() -> None:
    s = article_benchmark_settings()
    assert (s.num_prompts, s.max_concurrency, s.output_len, s.duration_s) == (100, 16, 256, None)
    assert s.dataset_name == "custom" and s.prompts == (ARTICLE_BENCHMARK.prompt,)
