"""SPA's real rung (issue 54): LLaMA-Factory's demo layout (human preference pairs and Alpaca
instructions) read and checked, the seed / held-out / pool split, the held-out pair metrics on
hand cases, the paper-scale path on a tiny random Llama and demo-format files the test writes,
and the pinned asset's files themselves."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from papers.spa import diagnose
from papers.spa.config import DataConfig
from papers.spa.data import (
    DEMO_PAIRS_FILE,
    DEMO_PROMPTS_FILE,
    load_demo_pairs,
    load_instructions,
    split_demo,
)
from papers.spa.tasks import DEMO_PAIR_RECORDS, DEMO_PROMPT_RECORDS, heldout_pair_metrics
from shared.config import compose_dict
from shared.entry import execute
from tests.helpers import require_assets, save_tiny_llama

WORDS = "question say something yes no 0123456789 good bad answer"


def demo_pair(i: int, system: bool = False, turns: int = 1) -> dict:
    conversation = [{"from": "system", "value": "be kind"}] if system else []
    for t in range(turns):
        if t:
            conversation.append({"from": "gpt", "value": f"answer {t}"})
        conversation.append({"from": "human", "value": f"question {i} say something {t}"})
    return {
        "conversations": conversation,
        "chosen": {"from": "gpt", "value": f"yes good answer {i}"},
        "rejected": {"from": "gpt", "value": f"no bad {i}"},
    }


def write_demo(folder, n_pairs=12, n_prompts=10):
    folder.mkdir(parents=True, exist_ok=True)
    pairs = [demo_pair(i, system=i % 3 == 0) for i in range(n_pairs)] + [demo_pair(99, turns=2)]
    prompts = [
        {"instruction": f"say something {i}", "input": "", "output": "x"} for i in range(n_prompts)
    ]
    prompts.append({"instruction": "answer this", "input": "a referenced input", "output": "x"})
    (folder / DEMO_PAIRS_FILE).write_text(json.dumps(pairs))
    (folder / DEMO_PROMPTS_FILE).write_text(json.dumps(prompts))
    return folder


def test_demo_files_read_as_chat_pairs_and_instructions(tmp_path):
    folder = write_demo(tmp_path)
    pairs = load_demo_pairs(folder / DEMO_PAIRS_FILE)
    assert len(pairs) == 13 and sum(p.single_turn for p in pairs) == 12
    assert pairs[0].messages == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "question 0 say something 0"},
    ]
    assert pairs[0].chosen == "yes good answer 0" and pairs[0].rejected == "no bad 0"
    assert [m["role"] for m in pairs[-1].messages] == ["user", "assistant", "user"]
    instructions = load_instructions(folder / DEMO_PROMPTS_FILE)
    assert len(instructions) == 10 and "answer this" not in instructions  # has an input


def test_a_bad_demo_file_stops_in_one_line_naming_the_record(tmp_path):
    path = tmp_path / DEMO_PAIRS_FILE
    path.write_text(json.dumps([demo_pair(0)])[:-20])
    with pytest.raises(ValueError, match="not a JSON file .*truncated or changed"):
        load_demo_pairs(path)
    broken = demo_pair(1)
    broken["rejected"] = {"from": "human", "value": "x"}
    path.write_text(json.dumps([demo_pair(0), broken]))
    with pytest.raises(ValueError, match=r"record 1 rejected: expected a 'gpt' message"):
        load_demo_pairs(path)
    path.write_text(json.dumps([{"conversations": [], "chosen": {}}]))
    with pytest.raises(ValueError, match="record 0: expected keys conversations, chosen"):
        load_demo_pairs(path)
    path.write_text(json.dumps([demo_pair(0)]))
    with pytest.raises(ValueError, match="1 records, the pinned file has 300"):
        load_demo_pairs(path, expected=300)
    prompts = tmp_path / DEMO_PROMPTS_FILE
    prompts.write_text(json.dumps([{"instruction": " ", "input": ""}]))
    with pytest.raises(ValueError, match="record 0: 'instruction' is empty"):
        load_instructions(prompts)


def test_split_keeps_seed_heldout_and_pools_apart(tmp_path):
    folder = write_demo(tmp_path)
    pairs = load_demo_pairs(folder / DEMO_PAIRS_FILE)
    instructions = load_instructions(folder / DEMO_PROMPTS_FILE)
    cfg = DataConfig(seed_size=8, iteration_sizes=[3, 4])
    split = split_demo(pairs, instructions, cfg)
    seed_prompts = {p.messages[-1]["content"] for p in split.seed}
    heldout_prompts = {p.messages[-1]["content"] for p in split.heldout}
    assert len(seed_prompts) == 8 and len(heldout_prompts) == 4  # 12 single-turn pairs
    assert not seed_prompts & heldout_prompts
    assert all(p.single_turn for p in split.seed + split.heldout)
    assert [len(pool) for pool in split.pools] == [3, 4]
    assert not set(split.pools[0]) & set(split.pools[1])
    again = split_demo(pairs, instructions, cfg)  # seeded by data.split_seed
    assert [p.chosen for p in again.seed] == [p.chosen for p in split.seed]
    capped = split_demo(
        pairs, instructions, DataConfig(seed_size=8, iteration_sizes=[3], heldout_pairs=2)
    )
    assert capped.heldout == split.heldout[:2]
    with pytest.raises(ValueError, match="data.seed_size=12: .* 12 single-turn pairs"):
        split_demo(pairs, instructions, DataConfig(seed_size=12, iteration_sizes=[3]))
    with pytest.raises(ValueError, match=r"data.iteration_sizes=\[8, 8\]: 16 prompts needed"):
        split_demo(pairs, instructions, DataConfig(seed_size=8, iteration_sizes=[8, 8]))


def test_paired_comparison_on_a_hand_case():
    wins = np.array([1.0, 1.0, 0.0, 0.5, 1.0])
    baseline = np.array([0.0, 1.0, 1.0, 0.5, 0.0])
    found = diagnose.compare(wins, baseline, np.random.default_rng(0))
    assert found["difference"] == pytest.approx(0.2)  # (+1 + 0 - 1 + 0 + 1) / 5
    assert (found["better"], found["worse"]) == (2, 1)
    assert found["sign_test_p"] == pytest.approx(1.0)  # 2 of 3 discordant: no evidence
    assert found["ci_low"] < 0.2 < found["ci_high"]
    init = torch.tensor([[-1.0, -1.0], [-2.0, -1.0]], dtype=torch.float64)
    policy = init + torch.tensor([[0.5, 0.0], [0.0, 0.0]], dtype=torch.float64)
    assert diagnose.pair_wins(policy, init).tolist() == [1.0, 0.5]
    assert diagnose.pair_margins(policy, init, 0.1).tolist() == pytest.approx([0.05, 0.0])


def test_heldout_metrics_on_a_hand_case():
    init = torch.tensor([[-10.0, -10.0], [-5.0, -6.0], [-8.0, -4.0], [-3.0, -3.0]])
    policy = init + torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0], [0.5, -0.5]])
    metrics = heldout_pair_metrics(policy.double(), init.double(), beta=0.1)
    # rewards (chosen - rejected) / 0.1: +1, -2, 0 (a tie: half), +1 -> 2.5 of 4 pairs
    assert metrics["heldout_acc"] == pytest.approx(2.5 / 4)
    assert metrics["reward_margin"] == pytest.approx(0.1 * (1 - 2 + 0 + 1) / 4)
    assert metrics["loglik_margin"] == pytest.approx(((-9 + 10) + (-5 + 4) + (-8 + 4) + 1) / 4)
    # pi_init against itself ties every pair
    assert heldout_pair_metrics(init.double(), init.double(), 0.1)["heldout_acc"] == 0.5


@pytest.mark.smoke
def test_the_demo_path_end_to_end_on_a_tiny_llama(tmp_path):
    model_dir = tmp_path / "model"
    save_tiny_llama(
        model_dir,
        [WORDS + " <|user|> <|assistant|> <|system|> be kind"],
        eos_token="</s>",
        chat_template=(
            "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        ),
    )
    folder = write_demo(tmp_path / "demo")
    overrides = [
        f"model.path={model_dir}",
        "data.source=llamafactory",
        f"data.path={folder}",
        "model.dtype=float32",
        "methods=[sft,dpo_seed,spa,spa_nosr,coin_flip]",
        "data.seed_size=6",
        "data.iteration_sizes=[4]",
        "data.eval_prompts=2",
        "data.max_length=40",
        "data.max_prompt_length=24",
        "spa.lambdas=[0.5]",
        "spa.max_new_tokens=6",
        "seed_dpo.optim.batch_size=3",
        "seed_dpo.optim.epochs=1",
        "spa.optim.batch_size=2",
        "runtime.progress=false",
    ]
    out = tmp_path / "run"
    record = execute("spa", compose_dict("spa", "paper", overrides), out)
    metrics = record["metrics"]
    # the diagnosis rescoring the run's final policies from its checkpoints gets its numbers
    numbers, _ = diagnose.run(out, 0, tuple(overrides), scale="paper")
    assert numbers["acc_sft"] == 0.5 and numbers["heldout_pairs"] == 6
    for method in ("dpo_seed", "spa", "coin_flip"):
        assert numbers[f"acc_{method}"] == metrics[method]["heldout_acc"]["mean"]
    assert metrics["sft"]["heldout_acc"]["mean"] == 0.5  # pi_init ties every pair
    for method in ("dpo_seed", "spa", "coin_flip"):
        assert 0.0 <= metrics[method]["heldout_acc"]["mean"] <= 1.0
        assert metrics[method]["mean_response_tokens"]["mean"] <= 6
    assert metrics["spa"]["heldout_acc_it0"]["mean"] == metrics["dpo_seed"]["heldout_acc"]["mean"]
    assert (out / "real_heldout.png").is_file()
    assert diagnose.agreement(numbers, record, 0) == 0
    # the paper-ratio experiment's arms and comparisons, on the same run's checkpoints
    found, _ = diagnose.run(
        out,
        0,
        tuple(overrides),
        scale="paper",
        arms=diagnose.RATIO_ARMS,
        comparisons=diagnose.RATIO_COMPARISONS,
    )
    assert "acc_spa_nosr" not in found
    assert found["spa_vs_coin_flip_difference"] == pytest.approx(
        found["acc_spa"] - found["acc_coin_flip"]
    )
    assert diagnose.agreement(found, record, 0) == 0


def test_the_paper_ratio_rule_on_hand_cases():
    def word(difference, low, high):
        key = f"{diagnose.RATIO_PREFIX}spa_vs_dpo_seed"
        numbers = {f"{key}_difference": difference, f"{key}_ci_low": low, f"{key}_ci_high": high}
        return diagnose.ratio_word(numbers)

    assert word(0.05, 0.01, 0.09) == "protocol"  # the claim's gain, resolved above 0
    assert word(0.03, -0.01, 0.07) == "open"  # the gain, but 0 inside the interval
    assert word(0.01, -0.03, 0.05) == "open"  # the bar and 0 both inside
    assert word(-0.03, -0.07, 0.019) == "method"  # the bar excluded
    assert word(0.0, -0.01, 0.02) == "open"  # the bar on the interval's edge: not excluded


def test_the_diagnosis_command_joins_the_paper_ratio_run(tmp_path, monkeypatch, capsys):
    # the scoring itself is tested on a tiny run above; here the command's wiring: the ratio
    # run scored with PAPER_RATIO and its arms, its numbers prefixed, checked against its record
    def scored(run_dir, seed, overrides=(), **kwargs):
        acc = {"sft": 0.5, "dpo_seed": 0.75, "spa": 0.7, "coin_flip": 0.6}
        if overrides:
            assert overrides == diagnose.PAPER_RATIO and kwargs["arms"] == diagnose.RATIO_ARMS
        numbers = {f"acc_{k}": v for k, v in acc.items()}
        numbers["spa_vs_dpo_seed_difference"] = -0.05
        numbers["spa_vs_dpo_seed_ci_low"], numbers["spa_vs_dpo_seed_ci_high"] = -0.1, 0.0
        return numbers, {"per_pair_wins": {}}

    written = {}
    monkeypatch.setattr(diagnose, "run", scored)
    monkeypatch.setattr(diagnose, "results_file", lambda *a: None)
    monkeypatch.setattr(
        diagnose, "write_evidence", lambda *args: written.update(numbers=args[1], details=args[4])
    )
    ratio = tmp_path / "ratio"
    ratio.mkdir()
    record = {
        "git_commit": "abc",
        "command": "python -m papers.spa.train scale=real ...",
        "wall_time_s": 1.0,
        "cpu_time_s": 1.0,
        "metrics": {"spa": {"heldout_acc": {"per_seed": {"0": 0.7}}}},
    }
    (ratio / "result.json").write_text(json.dumps(record))
    assert diagnose.main(["--run", str(tmp_path), "--ratio-run", str(ratio), "--write"]) == 0
    assert written["numbers"]["ratio_acc_spa"] == 0.7 and written["numbers"]["acc_spa"] == 0.7
    assert written["numbers"]["ratio_max_gap_to_run"] == 0
    assert written["details"]["paper_ratio"]["git_commit"] == "abc"
    assert "the paper-ratio iteration's rule says: method" in capsys.readouterr().out


def test_the_gain_claims_diagnosis_word_is_the_paper_ratio_rules():
    from papers.spa.claims import GAIN_CLAIM, REAL_DIAGNOSES
    from shared.findings import results_file

    evidence = results_file("spa", "diagnosis.json")
    if evidence is None or "ratio_spa_vs_dpo_seed_difference" not in evidence["numbers"]:
        pytest.skip("results/diagnosis.json holds no paper-ratio experiment yet")
    (diagnosis,) = [d for d in REAL_DIAGNOSES if GAIN_CLAIM in d.claims]
    assert diagnosis.word == diagnose.ratio_word(evidence["numbers"])


def test_the_real_rung_reads_only_the_pinned_model_and_pairs(tmp_path):
    from papers.spa.train import real_preflight
    from shared.config import compose

    assert real_preflight(compose("spa", "real")) == []
    cfg = compose("spa", "real", [f"data.path={tmp_path}", f"model.path={tmp_path}"])
    problems = real_preflight(cfg)
    assert any(p.startswith(f"data.path={tmp_path}: scale=real reads the pinned") for p in problems)
    assert any("scale=real runs smollm2_135m (model.path null)" in p for p in problems)


def test_the_pinned_demo_files():
    files = require_assets("llamafactory_demo")["llamafactory_demo"]
    pairs = load_demo_pairs(files[DEMO_PAIRS_FILE], expected=DEMO_PAIR_RECORDS)
    instructions = load_instructions(files[DEMO_PROMPTS_FILE], expected=DEMO_PROMPT_RECORDS)
    assert sum(p.single_turn for p in pairs) == 194  # 114 user-only, 80 system + user
    assert len(instructions) == 587  # of 999: those without an input
    split = split_demo(pairs, instructions, DataConfig(seed_size=100, iteration_sizes=[64, 64]))
    assert len(split.seed) == 100 and len(split.heldout) == 94
