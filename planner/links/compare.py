"""The Live Compare page's link: :class:`~planner.compare.settings.CompareSettings` through the one settings codec.

Every key, range and format is the field's own declaration (:mod:`planner.compare.settings`, read by
:class:`~planner.links.codec.SettingsCodec`); this module only names the codec. Every key is optional and only values
that differ from :data:`~planner.compare.settings.DEFAULT` are written:

* ``ep``: the endpoint NAMES to run, comma separated (``ep=vllm-a,tgi-b``). Names follow
  :class:`planner.serving.endpoints.Endpoint` (letters, digits, ``_ . -``), so a URL, a port or a key cannot be one.
  Base URLs, API-key variable names and keys have no key here at all: a link never carries them.
* ``system``, ``prompt``: text (``prompt`` at most :data:`~planner.compare.settings.MAX_PROMPT_CHARS` characters;
  a longer prompt is left out of the link rather than cut).
* ``temperature`` (0–2), ``top_p`` (0–1, > 0), ``max_tokens`` (1–32768), ``stop`` (comma separated, at most
  :data:`~planner.compare.settings.MAX_STOP` strings), ``seed`` (0 – 2^32 − 1), ``repeat`` (1–20), ``timeout``
  (seconds, 1–600).

:func:`decode` never raises: each bad parameter gives one warning line naming the parameter and what is accepted
and the setting keeps its default. Values of unknown parameters are never echoed (one could be a pasted key).

Example:
    >>> from planner.compare.settings import CompareSettings
    >>> encode(CompareSettings(endpoints=("a", "b"), prompt="Hi", max_tokens=64))
    {'ep': 'a,b', 'prompt': 'Hi', 'max_tokens': '64'}
    >>> decode({"ep": "a,b", "repeat": "3"}).settings.repeat
    3
"""

from __future__ import annotations

from planner.compare.settings import DEFAULT, CompareSettings
from planner.links.codec import SettingsCodec

__all__ = ["CODEC", "KEYS", "decode", "decode_link", "encode", "encode_link", "parse_field"]

#: The Live Compare page's codec.
CODEC: SettingsCodec[CompareSettings] = SettingsCodec(DEFAULT)
#: KEYS: field name → query key; the rest are :data:`CODEC`'s methods.
KEYS, encode, decode, decode_link, encode_link, parse_field = CODEC.functions()
