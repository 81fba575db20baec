"""SPA's toy acceptance claims (brief Sec. 5.5), declared as data and checked in CI.

A tiny GPT-2 policy over 8 response tokens (length 4, 4096 responses) is SFT-trained on a
behaviour distribution unrelated to the true reward r*; DPO on 128 ground-truth-labelled
prompts gives pi_0; three SPA iterations (512, 1024, 2048 fresh prompts) self-label pairs
with the implicit reward against pi_init. Metric: exact win rate against pi_init (every
response enumerated, ties half), after iteration 3. Seeds 0, 1, 2.
"""

from shared.claims import Claim, Diagnosis, MarginAtLeast, MeanAtLeast, MeanWithin

SCALE = "toy"
SEEDS = [0, 1, 2]
# All three seeds cost ~124 CPU s even after the bit-identical savings (issue 44: collate,
# no CPU gc.collect, cached pi_init enumeration and win-rate weights), over CI's 85 CPU s
# target, so CI runs every method on seeds 0, 1 (every claim, and every negative control's
# failure, holds on each of them and on their mean in results/toy.json) and
# `scripts/reproduce.py` runs all three.
CI_SEEDS = [0, 1]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001, 1002]
METHODS = ["sft", "dpo_seed", "spa", "spa_nosr", "oracle", "coin_flip", "full_label"]
PRIMARY = ("spa", "win_rate")
PLOT = "win_rate.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "win_rate",
    "gain",
    "win_rate_it1",
    "win_rate_it2",
    "expected_reward",
    "judge_acc_it1",
    "judge_acc_it3",
    "gap_closed",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

LABELS = {
    "sft": "SFT (pi_init)",
    "dpo_seed": "DPO on the seed (pi_0)",
    "spa": "SPA (self-judge + self-refinement)",
    "spa_nosr": "SPA-noSR (alpha = 0)",
    "oracle": "oracle judge (r*) in the loop",
    "coin_flip": "coin-flip judge (negative control)",
    "full_label": "full-label DPO (100% r* labels)",
}

CLAIMS = [
    Claim(
        "1a: SPA gain over DPO-seed >= 0.06 (mean over seeds)",
        MeanAtLeast("gain", ("spa",), 0.06),
    ),
    Claim(
        "1b: SPA gain over DPO-seed >= 0.02 on every seed",
        MeanAtLeast("gain", ("spa",), 0.02, every_seed=True),
    ),
    Claim(
        "2: self-judge label accuracy at iteration 1 >= 0.62 on every seed",
        MeanAtLeast("judge_acc_it1", ("spa",), 0.62, every_seed=True),
    ),
    # Reported, not gated (issue 29): the margin sits inside the float-path noise of two
    # trained policies (seed-0 win rates move by +-0.02 between CPUs' kernels): -0.005 on
    # seeds 0-2 here, -0.043 on an AVX-512 machine, -0.054 on the held-out seeds.
    Claim(
        "3: noise-aware loss non-inferior: WR(SPA) >= WR(SPA-noSR) - 0.03 (diagnostic: "
        "flips with the float path and on held-out seeds)",
        MarginAtLeast("win_rate", "spa", "spa_nosr", -0.03),
        role="diagnostic",
    ),
    Claim(
        "4a: sanity, WR(pi_init vs pi_init) = 0.5 within 1e-6",
        MeanWithin("win_rate", ("sft",), 1e-6, every_seed=True, target=0.5),
    ),
    Claim(
        "4b: sanity, WR(DPO-seed) >= 0.55 on every seed",
        MeanAtLeast("win_rate", ("dpo_seed",), 0.55, every_seed=True),
    ),
    # The same loop with a fair coin as judge must not reach the bar.
    Claim(
        "coin-flip judge: gain >= 0.06 (mean over seeds)",
        MeanAtLeast("gain", ("coin_flip",), 0.06),
        role="negative_control",
    ),
    Claim(
        "coin-flip judge: label accuracy at iteration 1 >= 0.62 on every seed",
        MeanAtLeast("judge_acc_it1", ("coin_flip",), 0.62, every_seed=True),
        role="negative_control",
    ),
    # The paper's "beats 100%-label DPO" does not reproduce in the toy (brief Sec. 5.4).
    Claim(
        "paper claim: SPA >= full-label DPO (not reproduced at toy scale)",
        MarginAtLeast("win_rate", "spa", "full_label", 0.0),
        role="diagnostic",
    ),
    Claim(
        "share of the DPO-seed -> full-label gap SPA closes >= 0.5",
        MeanAtLeast("gap_closed", ("spa",), 0.5),
        role="diagnostic",
    ),
    Claim(
        "oracle judge in the same loop: gain >= 0.06 (upper bound of the loop)",
        MeanAtLeast("gain", ("oracle",), 0.06),
        role="diagnostic",
    ),
]

# ------------------------------------------------------------------ real rung (issue 54)
# SmolLM2-135M-Instruct as pi_init, LLaMA-Factory's demo sets (configs/spa/real.yaml): the seed
# D_0 = 100 of the 194 single-turn human pairs (split_seed 42), the other 94 held out; two SPA
# iterations on 64 fresh Alpaca instructions each. No GPT-4 judge: every model is scored on the
# held-out human pairs by its implicit reward against pi_init (paper Eq. 7, the judge SPA
# itself labels with): the share of pairs whose reward prefers the human-chosen response.
# Declared before the first full real run, from the paper's direction and the toy's margins
# (1b: a gain of at least 0.02; 3: non-inferiority within 0.03).
REAL_SEEDS = [0]
REAL_METHODS = ["sft", "dpo_seed", "spa", "spa_nosr", "coin_flip"]
REAL_PLOT = "real_heldout.png"
REAL_TABLE_METRICS = [
    "heldout_acc",
    "heldout_acc_it1",
    "reward_margin",
    "loglik_margin",
    "mean_response_tokens",
    "pairs",
]
REAL_LABELS = {
    "sft": "SFT model (pi_init)",
    "dpo_seed": "DPO on the 100 seed pairs (pi_0)",
    "spa": "SPA (self-judge + self-refinement)",
    "spa_nosr": "SPA-noSR (plain DPO on self-labels)",
    "coin_flip": "coin-flip judge (negative control)",
}
REAL_PAPER_NUMBER = (
    "AlpacaEval 2.0 length-controlled win rate vs GPT-4-Turbo: SPA 15.39 % against DPO-on-seed "
    "9.03 % (Zephyr-7B SFT, 3.3 % of UltraFeedback's labels; paper Table 1)"
)
REAL_CI = False  # about two hours on 2 cores: scripts/reproduce.py --paper spa --scale real
# ~6,500 CPU s expected from a 300-CPU-s pilot (16 seed pairs, one iteration of 16 prompts):
# the seed's 39 DPO steps ~1,500, seven evaluations ~150 each, three arms of two iterations
# ~770 each; x 1.5 headroom, in units of the reference workload (tests/cpu_units.py)
REAL_CPU_BUDGET_UNITS = 6500.0
# The real path end to end on a few pairs (tests/test_real.py): one DPO step on 2 seed pairs,
# one iteration of 2 prompts, 8-token answers, 2 held-out pairs scored, one answer generated
# for its length, no checkpoint files (1.6 GB each for the 135M policy and its AdamW state).
REAL_SMOKE_OVERRIDES = (
    "data.seed_size=2",
    "data.iteration_sizes=[2]",
    "spa.lambdas=[0.5]",
    "spa.max_new_tokens=8",
    "data.max_length=48",
    "data.max_prompt_length=32",
    "data.eval_prompts=1",
    "data.heldout_pairs=2",
    "seed_dpo.optim.epochs=1",
    "seed_dpo.optim.batch_size=2",
    "spa.optim.batch_size=2",
    "methods=[sft,dpo_seed,spa]",
    "loop.save_checkpoints=false",
)
REAL_CLAIMS = [
    Claim(
        "SPA after the last iteration above DPO-on-seed: held-out pair accuracy +0.02",
        MarginAtLeast("heldout_acc", "spa", "dpo_seed", 0.02),
    ),
    Claim(
        "noise-aware loss not worse than plain self-labelled DPO: accuracy >= SPA-noSR's - 0.03",
        MarginAtLeast("heldout_acc", "spa", "spa_nosr", -0.03),
    ),
    Claim(
        "sanity: DPO on the seed learns the human preference, held-out accuracy >= 0.55",
        MeanAtLeast("heldout_acc", ("dpo_seed",), 0.55),
    ),
    # A check, not a bar: pi_init's implicit reward against itself is 0 on every response.
    Claim(
        "sanity: pi_init ties every held-out pair, accuracy 0.5 within 1e-9",
        MeanWithin("heldout_acc", ("sft",), 1e-9, target=0.5),
    ),
    # The same loop with a fair coin as judge must not reach the bar.
    Claim(
        "coin-flip judge above DPO-on-seed: held-out pair accuracy +0.02",
        MarginAtLeast("heldout_acc", "coin_flip", "dpo_seed", 0.02),
        role="negative_control",
    ),
    Claim(
        "SPA's implicit reward margin on held-out pairs above DPO-on-seed's (paired, continuous)",
        MarginAtLeast("reward_margin", "spa", "dpo_seed", 0.0),
        role="diagnostic",
    ),
]

# Why the failing real claim failed, with the numbers of the experiment that measured it:
# python -m papers.spa.diagnose (the real run's final policies rescored pair by pair from its
# checkpoints; paired bootstrap and sign test) -> results/diagnosis.json.
GAIN_CLAIM = "SPA after the last iteration above DPO-on-seed: held-out pair accuracy +0.02"
REAL_DIAGNOSES = [
    Diagnosis(
        claims=(GAIN_CLAIM,),
        word="method",
        headline=(
            "one iteration at the paper's ratio (400 prompts after the 100-pair seed) lowers "
            "held-out accuracy {ratio_spa_vs_dpo_seed_difference:+.3f} (95% interval "
            "{ratio_spa_vs_dpo_seed_ci_low:+.3f} to {ratio_spa_vs_dpo_seed_ci_high:+.3f}), "
            "about as far as a coin-flip judge ({ratio_coin_flip_vs_dpo_seed_difference:+.3f})"
        ),
        reason=(
            "the rung itself (two iterations of 64 prompts; rescored from its checkpoints, gap "
            "{max_gap_to_run:.0f}) leaves SPA at {acc_spa:.3f} against DPO-on-seed's "
            "{acc_dpo_seed:.3f} on the {heldout_pairs:.0f} held-out pairs (interval "
            "{spa_vs_dpo_seed_ci_low:+.3f} to {spa_vs_dpo_seed_ci_high:+.3f}: undecided), with "
            "iterations a fraction of the seed where the paper's are 4-15 times it. The "
            "decisive run takes the paper's ratio (one iteration of 400 fresh prompts after the "
            "100 seed pairs, as 8K after 2K; lr x steps as the paper's) from the same pi_0 "
            "(rescored, gap {ratio_max_gap_to_run:.0f}): SPA falls to {ratio_acc_spa:.3f} "
            "({ratio_spa_vs_dpo_seed_better:.0f} pairs better, {ratio_spa_vs_dpo_seed_worse:.0f} "
            "worse, sign test p = {ratio_spa_vs_dpo_seed_sign_test_p:.3f}; bootstrap 95% interval "
            "{ratio_spa_vs_dpo_seed_ci_low:+.3f} to {ratio_spa_vs_dpo_seed_ci_high:+.3f}, which "
            "excludes the claim's +0.02), the coin-flip judge to {ratio_acc_coin_flip:.3f} "
            "(SPA vs coin flip {ratio_spa_vs_coin_flip_difference:+.3f}, interval "
            "{ratio_spa_vs_coin_flip_ci_low:+.3f} to {ratio_spa_vs_coin_flip_ci_high:+.3f}); "
            "SPA's own reward margin on the same pairs grows (from {ratio_margin_dpo_seed:.4f} "
            "to {ratio_margin_spa:.4f}, interval of the rise "
            "{ratio_spa_vs_dpo_seed_margin_ci_low:+.4f} to "
            "{ratio_spa_vs_dpo_seed_margin_ci_high:+.4f}) while the coin flip's does not "
            "({ratio_margin_coin_flip:.4f}): the self-judge sharpens pi_0's implicit reward "
            "without agreeing more with human labels, so on this 135M model and these pairs the "
            "self-labelled iteration does not spread the seed's preference (rule fixed before "
            "the run: diagnose.ratio_word). Not tested: the paper's 7B model, 300-token answers "
            "and GPT-4 judge"
        ),
        experiment=(
            "python -m papers.spa.train scale=real hydra.run.dir=RUN; copy RUN/runs/base-s0 to "
            "RATIO/runs/; python -m papers.spa.train scale=real hydra.run.dir=RATIO "
            "'data.iteration_sizes=[400]' 'spa.lambdas=[0.5]' "
            "'methods=[sft,dpo_seed,spa,coin_flip]'; "
            "python -m papers.spa.diagnose --run RUN --ratio-run RATIO --write"
        ),
    ),
]
