"""Paper-scale readers (a malformed record fails naming it), preflight, and the causal-LM query
policy: one collection round and one SFT + IPO step on a tiny random LM saved to a folder, then
the whole paper-scale run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from papers.leret.collection import CollectedData, HopState, collect_iteration
from papers.leret.data import load_corpus, load_questions
from shared.config import compose, compose_dict
from shared.entry import execute
from shared.preflight import PreflightError
from tests.helpers import save_tiny_llama

TITLES = ["Paris", "France", "Berlin", "Germany", "Seine", "Rhine"]
TEXTS = [
    "Paris is the capital of France on the Seine river",
    "France is a country whose capital is Paris",
    "Berlin is the capital of Germany",
    "Germany is a country in Europe with capital Berlin",
    "The Seine is a river flowing through Paris",
    "The Rhine is a river flowing through Germany",
]


def _write(path, rows, jsonl=True):
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows))


def _hotpot(i: int) -> dict:
    a, b = TITLES[i % 6], TITLES[(i + 1) % 6]
    return {
        "question": f"Which river flows through the capital of {b}? ({i})",
        "supporting_facts": [[a, 0], [b, 1], [a, 2]],
    }


def test_corpus_with_a_malformed_record_fails_naming_it(tmp_path):
    rows = [{"title": t, "text": x} for t, x in zip(TITLES, TEXTS, strict=True)]
    _write(tmp_path / "wiki.jsonl", rows)
    titles, passages = load_corpus(tmp_path / "wiki.jsonl")
    assert titles == TITLES and passages[0] == f"Paris | {TEXTS[0]}"
    _write(tmp_path / "bad.jsonl", [*rows[:2], {"title": "X"}])
    with pytest.raises(ValueError, match=r"bad.jsonl line 3: missing field 'text'"):
        load_corpus(tmp_path / "bad.jsonl")
    (tmp_path / "torn.jsonl").write_text(json.dumps(rows[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"torn.jsonl line 2: not valid json"):
        load_corpus(tmp_path / "torn.jsonl")
    _write(tmp_path / "dup.jsonl", [rows[0], rows[0]])
    with pytest.raises(ValueError, match=r"dup.jsonl line 2: title 'Paris' repeats"):
        load_corpus(tmp_path / "dup.jsonl")


def test_questions_gold_titles_and_malformed_records(tmp_path):
    _write(tmp_path / "hotpot.json", [_hotpot(0), _hotpot(1)], jsonl=False)
    questions = load_questions(tmp_path / "hotpot.json", "hotpotqa", TITLES)
    assert questions[0].gold == frozenset({0, 1}) and questions[1].gold == frozenset({1, 2})
    hover = [{"claim": "Paris is in France.", "supporting_facts": [["Paris", 0]]}]
    _write(tmp_path / "hover.json", hover, jsonl=False)
    (q,) = load_questions(tmp_path / "hover.json", "hover", TITLES)
    assert q.text == "Is the following statement supported: Paris is in France."
    bad = [_hotpot(0), {"question": "no facts", "supporting_facts": []}]
    _write(tmp_path / "bad.json", bad, jsonl=False)
    with pytest.raises(ValueError, match=r"bad.json record 1: field 'supporting_facts'"):
        load_questions(tmp_path / "bad.json", "hotpotqa", TITLES)
    unknown = [{"question": "q", "supporting_facts": [["Atlantis", 0]]}]
    _write(tmp_path / "unknown.json", unknown, jsonl=False)
    with pytest.raises(ValueError, match=r"unknown.json record 0: none of its gold titles"):
        load_questions(tmp_path / "unknown.json", "hotpotqa", TITLES)


def test_paper_preflight_names_what_is_missing():
    with pytest.raises(PreflightError, match="model.path is not set.*data.corpus_path is not set"):
        execute("leret", compose_dict("leret", "paper"), "/tmp/never-made-leret")


def test_paper_config_holds_the_papers_values():
    cfg = compose("leret", "paper")
    assert cfg.preference.beta == 0.05 and cfg.preference.loss == "ipo"
    assert cfg.preference.optim.lr == 1e-7 and cfg.preference.optim.batch_size == 4
    assert cfg.preference.optim.epochs == 2 and cfg.sft.optim.epochs == 1
    assert cfg.sft.optim.batch_size == 8 and cfg.sft.optim.name == "rmsprop"
    assert cfg.sft.optim.warmup_steps == 150 and cfg.loop.grad_clip == 10.0
    assert cfg.retriever.top_k == 3 and cfg.prompts.n_candidates == 12
    assert cfg.collection.samples_per_prompt == 1 and cfg.collection.top_bonus == 0.5


CHAT = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture
def paper_files(tmp_path):
    model_dir = tmp_path / "model"
    save_tiny_llama(
        model_dir,
        [" ".join(TEXTS) + " Context Question Search query <|system|> <|user|> <|assistant|>"],
        eos_token="</s>",
        chat_template=CHAT,
    )
    _write(
        tmp_path / "wiki.jsonl",
        [{"title": t, "text": x} for t, x in zip(TITLES, TEXTS, strict=True)],
    )
    _write(tmp_path / "train.json", [_hotpot(i) for i in range(12)], jsonl=False)
    _write(tmp_path / "dev.json", [_hotpot(i) for i in range(3)], jsonl=False)
    return tmp_path


def _overrides(root, out_root):
    return [
        f"model.path={root / 'model'}",
        f"data.corpus_path={root / 'wiki.jsonl'}",
        f"data.train_path={root / 'train.json'}",
        f"data.dev_path={root / 'dev.json'}",
        "model.dtype=float32",
        "model.max_new_tokens=6",
        "model.max_length=512",
        "data.n_demo=2",
        "data.n_validation=2",
        "data.per_iteration=[3]",
        "data.n_test=2",
        "prompts.n_candidates=2",
        "prompts.n_few_shot=1",
        "collection.temperature=1.0",
        "collection.samples_per_prompt=2",
        "runtime.progress=false",
        f"out_root={out_root}",
    ]


def test_lm_policy_collects_and_takes_an_sft_and_an_ipo_step(paper_files, tmp_path, one_thread):
    from papers.leret.train import Runtime, make_environment, train_preference, train_sft

    steps = [
        "sft.optim.lr=1e-2",
        "preference.optim.lr=1e-2",
        "sft.optim.warmup_steps=0",
        "preference.optim.warmup_steps=0",
    ]  # a visible step (1e-7 is for an 8B model)
    cfg = compose("leret", "paper", [*_overrides(paper_files, tmp_path), *steps])
    env = make_environment(cfg, seed=0)
    from papers.leret.lm_policy import CausalLMPolicy

    policy = CausalLMPolicy.from_pretrained(cfg.model, env)
    data = collect_iteration(
        policy,
        env,
        env.task.splits.iterations[0],
        [None, []],
        2,
        1.0,
        0.5,
        np.random.default_rng(0),
    )
    assert data.inputs >= 3  # one round over the chunk, hop 1 at least
    state = HopState(env.task.splits.iterations[0][0], (), 0)
    prompt_text = policy.tokenizer.decode(policy._prompt_ids(state, None))
    assert prompt_text.startswith("<|system|>You are a helpful assistant.")
    assert prompt_text.endswith("Search query:</s><|assistant|>")
    # one SFT and one IPO step on hand-made data through the same path
    hand = CollectedData(
        sft_states=[state],
        sft_queries=["Seine river Paris"],
        pair_states=[state],
        chosen=["Seine river Paris"],
        rejected=["Berlin Germany"],
    )
    rt = Runtime(cfg, tmp_path)
    before = [p.detach().clone() for p in policy.module.parameters()]
    sft = train_sft(
        policy, hand, rt, tmp_path / "sft", {"method": "t", "seed": 0, "stage": "sft"}, (0,)
    )
    changed = [not torch.equal(a, b) for a, b in zip(before, sft.module.parameters(), strict=True)]
    assert any(changed)
    enc = sft.encode([state], ["Seine river Paris"])
    with torch.no_grad():
        ref_w = sft.sequence_log_probs(sft.module, enc)
    ipo = train_preference(
        sft, hand, rt, tmp_path / "ipo", {"method": "t", "seed": 0, "stage": "ipo"}, (1,)
    )
    with torch.no_grad():
        log_w = ipo.sequence_log_probs(ipo.module, enc)
    assert torch.isfinite(log_w).all() and not torch.equal(log_w, ref_w)
    assert (tmp_path / "ipo" / "checkpoint.pt").is_file()


def test_paper_scale_run_end_to_end_on_a_tiny_local_model(paper_files, tmp_path, one_thread):
    out = tmp_path / "run"
    record = execute(
        "leret", compose_dict("leret", "paper", _overrides(paper_files, tmp_path)), out
    )
    assert set(record["metrics"]) == {"base", "few_shot", "leret_cd", "leret"}
    assert 0.0 <= record["metrics"]["leret"]["recall"]["mean"] <= 1.0
    logged = sorted(p.name for p in out.rglob("contexts_*.jsonl"))
    assert "contexts_base.jsonl" in logged and "contexts_prompts_it1.jsonl" in logged
    line = json.loads(
        (out / "runs" / "shared-s0" / "contexts_base.jsonl").read_text().split("\n")[0]
    )
    assert set(line) == {"question", "queries", "passages"}
