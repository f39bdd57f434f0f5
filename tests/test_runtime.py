"""Process-wide run settings: when bf16 autocast is used."""

from __future__ import annotations

import logging

import torch

import nmt.runtime
from nmt.runtime import native_bf16, use_bf16

CPU = torch.device("cpu")


def test_auto_follows_the_hardware(monkeypatch):
    monkeypatch.setattr(nmt.runtime, "native_bf16", lambda device: True)
    assert use_bf16("auto", CPU) is True
    monkeypatch.setattr(nmt.runtime, "native_bf16", lambda device: False)
    assert use_bf16("auto", CPU) is False


def test_an_explicit_choice_wins_and_a_slow_one_is_warned_about(monkeypatch, caplog):
    monkeypatch.setattr(nmt.runtime, "native_bf16", lambda device: False)
    with caplog.at_level(logging.WARNING, logger="nmt.runtime"):
        assert use_bf16(True, CPU) is True
        assert use_bf16(False, CPU) is False
    assert len(caplog.records) == 1 and "no native bfloat16" in caplog.records[0].getMessage()


def test_the_cpu_check_reads_torchs_capability_flags(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    assert native_bf16(CPU) is True
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    assert native_bf16(CPU) is False
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")
    assert native_bf16(CPU) is False, "a torch without the private checks: assume no bf16"
