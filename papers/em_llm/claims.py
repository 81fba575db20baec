"""EM-LLM's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

A tiny Llama (2 layers, d = 64, 4 heads) is trained on record streams of <= ~76 tokens, then
reads 60 documents of 40 records (~330-400 tokens) through the training-free memory attention
(chunk 8, 4 init tokens, 32-token local window, gamma = 1, events of 4..16 tokens, InfLLM
blocks of 8). Metric: pass-key accuracy at the last position with n_mem = 64 and unlimited,
plus boundary F1 and modularity of the segmentations on 20 documents. Seeds 0, 1.
"""

from shared.claims import (
    Claim,
    Diagnosis,
    MarginAtLeast,
    MeanAtLeast,
    MeanAtMost,
    RatioAtMost,
)

SCALE = "toy"
SEEDS = [0, 1]
# CI gates seed 0 (~57 CPU s; both seeds took 114, too close to the 120 CPU-s target on a
# quiet machine) and compares its per-seed metrics with results/toy.json bit for bit;
# `scripts/reproduce.py` runs both seeds and the held-out pair.
CI_SEEDS = [0]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001]
METHODS = ["full", "sliding_window", "infllm", "em_llm", "em_llm_sm", "fixed_segmentation"]
PRIMARY = ("em_llm", "acc_64")
PLOT = "passkey_and_surprise.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "acc_inf",
    "acc_64",
    "boundary_f1",
    "modularity",
    "needle_intact",
    "peak_keys_64",
    "events_64",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)


def config_table_metrics(cfg) -> list[str]:
    """TABLE_METRICS with one column per ``eval.budgets`` entry (unlimited first), so a run with
    other budgets shows its own pass-key, peak-key and event columns."""
    names = sorted(("inf" if b < 0 else str(b) for b in cfg.eval.budgets), key=lambda n: n != "inf")
    finite = [n for n in names if n != "inf"]
    return [
        *(f"acc_{n}" for n in names),
        "boundary_f1",
        "modularity",
        "needle_intact",
        *(f"peak_keys_{n}" for n in finite),
        *(f"events_{n}" for n in finite),
    ]


LABELS = {
    "full": "full attention (beyond training length)",
    "sliding_window": "sliding window (init + local)",
    "infllm": "InfLLM (fixed 8-token events)",
    "em_llm": "EM-LLM_S (surprise events)",
    "em_llm_sm": "EM-LLM_SM (refined events)",
    "em_llm_c": "EM-LLM_S+C (contiguity buffer)",
    "em_llm_smc": "EM-LLM_SM+C",
    "fixed_segmentation": "fixed segmentation (evenly spaced)",
}

CLAIMS = [
    # 1. memory extends the context beyond the training length
    Claim(
        "1: EM-LLM and InfLLM with unlimited n_mem reach >= 0.9 on every seed",
        MeanAtLeast("acc_inf", ("em_llm", "infllm"), 0.9, every_seed=True),
    ),
    # Not reproduced at toy scale: the seed-1 LM's full attention generalises to 5x its
    # training length (0.98; seed 0: 0.02), so this part of brief claim 1 is reported only.
    Claim(
        "1: full attention beyond its training length stays <= 0.5 on every seed (reported)",
        MeanAtMost("acc_inf", ("full",), 0.5, every_seed=True),
        role="diagnostic",
    ),
    Claim(
        "1: the sliding window stays <= 0.3 on every seed",
        MeanAtMost("acc_inf", ("sliding_window",), 0.3, every_seed=True),
    ),
    # 2. retrieval under a 64-token budget
    Claim(
        "2: EM-LLM >= sliding window + 0.3 at n_mem = 64",
        MarginAtLeast("acc_64", "em_llm", "sliding_window", 0.3),
    ),
    Claim(
        "2: EM-LLM >= InfLLM - 0.10 at n_mem = 64",
        MarginAtLeast("acc_64", "em_llm", "infllm", -0.10),
    ),
    # 3. event segmentation
    Claim(
        "3: boundary F1 of surprise events >= 0.9 on every seed",
        MeanAtLeast("boundary_f1", ("em_llm",), 0.9, every_seed=True),
    ),
    Claim(
        "3: boundary F1 of the fixed segmentation <= 0.5",
        MeanAtMost("boundary_f1", ("fixed_segmentation",), 0.5),
    ),
    # 4. graph quality: Q(fixed) / Q(S) <= 1 / 1.15 and Q(S) / Q(SM) <= 1
    Claim(
        "4: Q(S) >= 1.15 x Q(fixed)",
        RatioAtMost("modularity", "fixed_segmentation", "em_llm", 1 / 1.15),
    ),
    Claim(
        "4: Q(SM) >= Q(S)",
        RatioAtMost("modularity", "em_llm", "em_llm_sm", 1.0),
    ),
    # negative controls: the baselines must fail the memory's bar, the fixed events the
    # segmentation's
    Claim(
        "control: full attention reaches >= 0.9 with unlimited context",
        MeanAtLeast("acc_inf", ("full",), 0.9),
        role="negative_control",
    ),
    Claim(
        "control: the sliding window reaches >= 0.9",
        MeanAtLeast("acc_inf", ("sliding_window",), 0.9),
        role="negative_control",
    ),
    Claim(
        "control: fixed segmentation reaches boundary F1 >= 0.9",
        MeanAtLeast("boundary_f1", ("fixed_segmentation",), 0.9),
        role="negative_control",
    ),
    Claim(
        "control: Q(fixed) >= 1.15 x Q(S)",
        RatioAtMost("modularity", "em_llm", "fixed_segmentation", 1 / 1.15),
        role="negative_control",
    ),
    Claim(
        "EM-LLM - InfLLM at n_mem = 64 (the paper's direction; reported)",
        MarginAtLeast("acc_64", "em_llm", "infllm", 0.0),
        role="diagnostic",
    ),
    Claim(
        "needle intact (p and PK in one event): surprise - fixed (reported)",
        MarginAtLeast("needle_intact", "em_llm", "fixed_segmentation", 0.0),
        role="diagnostic",
    ),
]

# --------------------------------------------------------------------------- real rung (issue 42)
# scale=real (configs/em_llm/real.yaml): the pretrained SmolLM2-135M (8,192-token window) read
# through the training-free memory; 5 pass-key documents per length (filler text, the key at a
# random depth in [0.1, 0.9]) and the segmentation of the 6 docutils test documents.
REAL_SEEDS = [0]
REAL_METHODS = ["full", "sliding_window", "em_llm", "em_llm_sm", "fixed_segmentation"]
REAL_PLOT = "real_passkey_segmentation.png"
REAL_TABLE_METRICS = [
    "passkey_4k",
    "passkey_8k",
    "passkey_16k",
    "passkey_32k",
    "modularity",
    "conductance",
    "events",
]
# in units of the reference workload (tests/cpu_units.py): 7,500 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 5000.0  # the full run measured 5,048 CPU s (2 workers, shared machine)
REAL_CI = False
# tests/test_real.py's end-to-end pass (~20 CPU s): one pass-key document per length of
# 400-500 tokens (full attention 200-300), a 128-token local window, 300 tokens of one test
# document.
REAL_SMOKE_OVERRIDES = (
    "real.passkey_lengths.passkey_16k=400",
    "real.passkey_lengths.passkey_32k=500",
    "real.full_lengths.passkey_4k=200",
    "real.full_lengths.passkey_8k=300",
    "real.documents=1",
    "real.segmentation_documents=1",
    "real.segmentation_tokens=300",
    "memory.n_local=128",
    "memory.n_mem=64",
    "memory.chunk=64",
    "memory.n_init=8",
    "real.processes=1",
)
REAL_PAPER_NUMBER = "pass-key 100 % up to 10M tokens (LLaMA-3.1-8B, EM-LLM repository)"
REAL_LABELS = {
    "full": "full attention (inside the 8k window)",
    "sliding_window": "sliding window (init + local)",
    "em_llm": "EM-LLM_S (surprise events)",
    "em_llm_sm": "EM-LLM_SM (refined events, segmentation only)",
    "fixed_segmentation": "fixed segmentation (evenly spaced)",
}
REAL_CLAIMS = [
    # 1. pass-key retrieval beyond the window
    Claim(
        "1: EM-LLM pass-key accuracy >= 0.8 at 16k tokens (2x the window)",
        MeanAtLeast("passkey_16k", ("em_llm",), 0.8),
    ),
    Claim(
        "1: EM-LLM pass-key accuracy >= 0.8 at 32k tokens (4x the window)",
        MeanAtLeast("passkey_32k", ("em_llm",), 0.8),
    ),
    Claim(
        "1: EM-LLM >= sliding window + 0.5 at 16k",
        MarginAtLeast("passkey_16k", "em_llm", "sliding_window", 0.5),
    ),
    Claim(
        "1: EM-LLM >= sliding window + 0.5 at 32k",
        MarginAtLeast("passkey_32k", "em_llm", "sliding_window", 0.5),
    ),
    # 2. surprise events are better communities of the key-similarity graph than fixed blocks
    Claim(
        "2: modularity of surprise events (S) > fixed blocks",
        MarginAtLeast("modularity", "em_llm", "fixed_segmentation", 0.0),
    ),
    Claim(
        "2: modularity of refined surprise events (SM) > fixed blocks",
        MarginAtLeast("modularity", "em_llm_sm", "fixed_segmentation", 0.0),
    ),
    Claim(
        "2: conductance of surprise events (S) < fixed blocks",
        MarginAtLeast("conductance", "fixed_segmentation", "em_llm", 0.0),
    ),
    Claim(
        "2: conductance of refined surprise events (SM) < fixed blocks",
        MarginAtLeast("conductance", "fixed_segmentation", "em_llm_sm", 0.0),
    ),
    # negative control: the sliding window cannot see the key, so must not reach EM-LLM's bar
    Claim(
        "control: the sliding window reaches >= 0.8 at 16k",
        MeanAtLeast("passkey_16k", ("sliding_window",), 0.8),
        role="negative_control",
    ),
    Claim(
        "control: the sliding window reaches >= 0.8 at 32k",
        MeanAtLeast("passkey_32k", ("sliding_window",), 0.8),
        role="negative_control",
    ),
    # the ceiling: the model's own full attention inside its window (reported)
    Claim(
        "ceiling: full attention >= 0.8 at 4k (reported)",
        MeanAtLeast("passkey_4k", ("full",), 0.8),
        role="diagnostic",
    ),
    Claim(
        "ceiling: full attention >= 0.8 at 8k (reported)",
        MeanAtLeast("passkey_8k", ("full",), 0.8),
        role="diagnostic",
    ),
]

# Issue 51: the first real protocol's two failing conductance claims (results/real_first.json:
# that protocol's metric, the mean over events; results/real.json is the rerun with the
# paper's minimum, where both hold).
# `python -m papers.em_llm.diagnose --write` wrote results/diagnosis.json (6 test documents,
# 200 size-matched null draws each, the official conductance() on the same graphs).
DIAGNOSE = "python -m papers.em_llm.diagnose --write --official /tmp/official-em_llm"
OFFICIAL_CONDUCTANCE = (
    "official similarity.conductance() (em-llm/EM-LLM-model @ e911d1f) on the same 6 graphs and "
    "partitions: min S {official_min_S:.2f}, SM {official_min_SM:.2f}, fixed "
    "{official_min_fixed:.2f}; mean S {official_mean_S:.2f}, SM {official_mean_SM:.2f}, fixed "
    "{official_mean_fixed:.2f}; each event's phi equals ours to "
    "{official_max_relative_difference:.0e} (relative)"
)
REAL_DIAGNOSES = [
    Diagnosis(
        claims=("2: conductance of surprise events (S) < fixed blocks",),
        word="code",
        headline=(
            "ours averaged conductance over events, which sizes alone decide (structureless graph: "
            "{mean_structureless_ratio_S_fixed:.3f} vs measured {mean_ratio_S_fixed:.3f}); with "
            "the paper's min, fixed - S = {min_margin_S:.1f}: holds"
        ),
        official_headline=(
            "each event's conductance equals ours (relative difference "
            "{official_max_relative_difference:.0e}); it takes the min"
        ),
        reason=(
            "our conductance averaged phi over events, which grows with mean(1/n): the surprise "
            "events' sizes on a structureless graph give S / fixed = "
            "{mean_structureless_ratio_S_fixed:.3f} (measured {mean_ratio_S_fixed:.3f}); the "
            "paper's Eq. 4 (official similarity.py L53) takes the min over events, and with it "
            "fixed - S = {min_margin_S:.2f} (S {min_S:.2f} < fixed {min_fixed:.2f}: holds); "
            "sizes set that too (structureless min ratio {min_structureless_ratio_S_fixed:.3f} "
            "vs {min_ratio_S_fixed:.3f}); against its size-matched null, null - S = "
            "{min_null_S_margin:.2f} with the min (share of null draws <= S "
            "{min_null_S_p:.3f}) and {mean_null_S_margin:.2f} with the mean"
        ),
        experiment=DIAGNOSE,
        official=OFFICIAL_CONDUCTANCE,
    ),
    Diagnosis(
        claims=("2: conductance of refined surprise events (SM) < fixed blocks",),
        word="code",
        headline=(
            "as for S: with the paper's min over events fixed - SM = {min_margin_SM:.1f} (the mean "
            "gave {mean_margin_SM:.1f}): holds"
        ),
        official_headline=(
            "each event's conductance equals ours (relative difference "
            "{official_max_relative_difference:.0e}); it takes the min"
        ),
        reason=(
            "as for S: the mean over events gave fixed - SM = {mean_margin_SM:.2f} by event "
            "sizes alone (structureless S / fixed {mean_structureless_ratio_S_fixed:.3f}); with "
            "the paper's min over events (Eq. 4, official similarity.py L53) fixed - SM = "
            "{min_margin_SM:.2f} (SM {min_SM:.2f} < fixed {min_fixed:.2f}: holds); against its "
            "size-matched null, null - SM = {min_null_SM_margin:.2f} with the min (share of "
            "null draws <= SM {min_null_SM_p:.3f}) and {mean_null_SM_margin:.2f} with the mean"
        ),
        experiment=DIAGNOSE,
        official=OFFICIAL_CONDUCTANCE,
    ),
]
