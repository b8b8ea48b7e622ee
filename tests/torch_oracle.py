"""Run a test on kit.torch and, when PyTorch is installed, on real PyTorch as the oracle."""

from __future__ import annotations

import pytest

import kit.torch


def libraries():
    """pytest params: kit.torch always; real PyTorch too when it can be imported."""
    libs = [pytest.param(kit.torch, id="kit")]
    try:
        import torch
    except ImportError:
        return libs
    return libs + [pytest.param(torch, id="pytorch")]


def is_kit(torch):
    """True when the `torch` a test received is kit.torch (kit-only message checks follow)."""
    return torch is kit.torch
