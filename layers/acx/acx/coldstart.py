"""What a Lambda function does about its cold start, in one place (the handlers call it).

In Lambda (``AWS_LAMBDA_FUNCTION_NAME`` set) :func:`begin`, called first thing at init:

- switches the cyclic garbage collector off until the first invocation ends. Init and the first
  request build what a function keeps for its life (modules, botocore's service models, clients,
  numpy, the search index), and full collections set off by those allocations walk all of it again.
  :func:`init_done` freezes what init built; :func:`first_invocation_done` freezes what the first
  request added and switches the collector back on. Frozen objects are never walked again and are
  still freed by reference counting. What it does NOT bound: reference cycles dropped during init
  and the first invocation are frozen too and never freed.
- tells pydantic to load no plugins (it would scan every installed distribution's entry points at
  the first model; the functions use none). An operator who needs one sets
  ``PYDANTIC_DISABLE_PLUGINS`` to ``""`` in the function's environment.
- makes powertools' ``event_handler`` and ``data_classes`` packages import a resolver or event class
  when its name is first read (:mod:`acx.reexports`), instead of all of them.

Anywhere else (tests, the local stack: long-lived processes that may never call a handler) the
collector and the environment are left alone; the lazy re-exports apply everywhere, as they return
the same objects as a plain import.

``bench/coldstart.py`` and ``bench/search.py`` measure the effect.
"""

from __future__ import annotations

import gc
import os

from acx.reexports import lazy_reexports

_PENDING = [False]


def in_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def begin() -> None:
    """Call before the handler module's other imports."""
    if in_lambda():
        _PENDING[0] = True
        gc.disable()
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    lazy_reexports("aws_lambda_powertools.event_handler")
    lazy_reexports("aws_lambda_powertools.utilities.data_classes")


def init_done() -> None:
    """Call at the end of the handler module: what init built is kept for the process's life."""
    if _PENDING[0]:
        gc.freeze()


def first_invocation_done() -> None:
    """Call when an invocation ends; after the first, the collector is back on."""
    if _PENDING[0]:
        _PENDING[0] = False
        gc.freeze()
        gc.enable()
