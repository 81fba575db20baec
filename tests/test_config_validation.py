"""Every option the config accepts runs, or is refused at start naming the key (issue 43).

Each case of the issue's table has a test named for it: the composed config is refused when it
becomes its dataclass (``shared.config.to_object`` runs each ``Config.validate``), in one line
that names the key, its value and what would be valid, before any data is read or any run
folder is made.
"""

from __future__ import annotations

import re

import pytest
import torch

from shared import config as config_lib
from shared.config import ConfigError, compose_dict, to_object
from shared.entry import execute, paper_modules, table_spec
from shared.preflight import PreflightError
from tests.helpers import run_cli


def refused(slug: str, overrides: list[str], key: str, scale: str = "smoke") -> str:
    """The one-line refusal of ``overrides``; asserts it names ``key`` first."""
    with pytest.raises(ConfigError) as error:
        to_object(compose_dict(slug, scale, overrides))
    message = str(error.value)
    assert "\n" not in message
    assert re.match(rf"{re.escape(key)}=", message), message
    return message


def test_case01_adamcb_an_eval_interval_that_does_not_divide_an_epoch_is_refused():
    message = refused("adamcb", ["loop.eval_every=2"], "loop.eval_every")
    assert "must divide the 3 steps per epoch" in message
    to_object(compose_dict("adamcb", "smoke", ["loop.eval_every=1"]))  # divides: accepted


def test_case02_adamcb_a_negative_epoch_count_is_refused():
    assert "must be >= 1" in refused("adamcb", ["epochs=-1"], "epochs")


@pytest.mark.parametrize(
    ("slug", "overrides", "key"),
    [
        ("conformal_bma", ["replications=-2"], "replications"),
        ("ppi_ate", ["replications=0"], "replications"),
    ],
)
def test_case06_a_replication_count_below_one_is_refused(slug, overrides, key):
    # Was: KeyError 'cb_linear/covered' / 'aipw/estimate' after the (empty) run.
    assert "must be >= 1" in refused(slug, overrides, key)


@pytest.mark.parametrize(
    ("slug", "key"),
    [("adamcb", "loop.checkpoint_every"), ("conformal_bma", "checkpoint_every")],
)
def test_case08_a_zero_checkpoint_interval_is_refused(slug, key):
    # Was: ZeroDivisionError (integer modulo by zero) inside the loop.
    assert "must be >= 1" in refused(slug, [f"{key}=0"], key)


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_case12_etcd_gin_without_causal_learn_is_refused_before_any_graph(
    monkeypatch, tmp_path, scale
):
    # A missing optional package is not a bad config value: the entry point's preflight names
    # it at every scale (train.OPTIONAL_PACKAGES), before the run folder is made.
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "causallearn" else real(name)
    )
    with pytest.raises(PreflightError, match="method 'gin': package 'causallearn' is missing"):
        execute("etcd", compose_dict("etcd", scale, ["methods=[gin,etcd]"]), tmp_path / "run")
    assert not (tmp_path / "run").exists()
    to_object(compose_dict("etcd", scale, ["methods=[etcd]"]))  # without GIN: accepted


def test_case13_etcd_too_few_samples_names_data_n_and_the_minimum():
    message = refused("etcd", ["data.n=50"], "data.n")
    assert "must be >= data.min_samples (100)" in message


def test_case19_t2v_turbo_v2_labels_quote_the_configured_lcm_steps():
    # Was: "4 LCM steps" (fixed text in claims.LABELS) whatever eval.lcm_steps said.
    _, claims = paper_modules("t2v_turbo_v2")
    cfg = to_object(compose_dict("t2v_turbo_v2", "smoke", ["eval.lcm_steps=2"]))
    _, labels = table_spec(claims, "smoke", cfg)
    assert labels["cd"].endswith("2 LCM steps")
    default = to_object(compose_dict("t2v_turbo_v2", "toy"))
    assert table_spec(claims, "toy", default)[1]["cd"] == claims.LABELS["cd"]  # unchanged text


NO_LOOP_EVALUATION = [
    "em_llm",
    "gnn_kvariance",
    "horizon_generalization",
    "infoalign",
    "leret",
    "limac",
    "lucidppn",
    "matryoshka_kv",
    "spa",
]


@pytest.mark.parametrize("slug", NO_LOOP_EVALUATION)
def test_case14_loop_eval_every_is_no_key_where_nothing_evaluates_in_the_loop(slug):
    # Was: accepted and ignored (shared.loop.fit got no evaluate=); now the schema
    # (TrainLoopConfig) has no such key, so Hydra names it at composition.
    with pytest.raises(Exception, match="eval_every"):
        compose_dict(slug, "smoke", ["loop.eval_every=5"])


def test_case03_controlar_more_figure_samples_than_test_controls_is_refused():
    message = refused("controlar", ["sampling.n_show=6"], "sampling.n_show")
    assert "must be <= data.n_test (4)" in message


def test_case04_em_llm_a_plot_document_past_the_test_set_is_refused():
    message = refused("em_llm", ["eval.plot_document=5"], "eval.plot_document")
    assert "must be < eval.n_documents (3)" in message


def test_case05_qnbo_a_report_step_past_the_last_outer_step_is_refused():
    message = refused("qnbo", ["quadratic.budget.report_at=10"], "quadratic.budget.report_at")
    assert "must be <= quadratic.budget.outer_steps" in message


def test_case07_controlar_negative_training_steps_are_refused():
    assert "must be >= 1" in refused("controlar", ["train.steps=-1"], "train.steps")


def test_case09_horizon_methods_that_no_active_layout_runs_name_the_layout():
    message = refused(
        "horizon_generalization", ["active_layouts=[wall]", "methods=[mlp]"], "methods"
    )
    assert "layouts.wall.methods" in message


def test_case11_spa_an_unknown_threshold_is_refused_before_sft():
    message = refused("spa", ["spa.threshold=window"], "spa.threshold")
    assert "choose one of minibatch, rolling" in message


def test_case16_limac_an_unknown_screen_family_is_refused():
    message = refused("limac", ["eval.screen_family=nosuchfamily"], "eval.screen_family")
    assert "messages" in message


def test_case17_resdex_an_evaluation_iteration_past_the_run_is_refused():
    message = refused("resdex", ["eval.at=[2,6]"], "eval.at")
    assert "1..hyper.iterations" in message


def test_case18_em_llm_budgets_without_the_unlimited_run_are_refused():
    message = refused("em_llm", ["eval.budgets=[32]"], "eval.budgets")
    assert "must include -1" in message


def test_case18_em_llm_table_columns_follow_the_budgets():
    _, claims = paper_modules("em_llm")
    default = to_object(compose_dict("em_llm", "toy"))
    assert table_spec(claims, "toy", default)[0] == claims.TABLE_METRICS  # unchanged
    other = to_object(compose_dict("em_llm", "smoke", ["eval.budgets=[32,-1]"]))
    metrics = table_spec(claims, "smoke", other)[0]
    assert "acc_32" in metrics and "peak_keys_32" in metrics and "acc_64" not in metrics


def test_case10_a_model_folder_without_a_model_is_named_before_any_work(tmp_path):
    # Was: preflight passed (the folder existed); transformers then asked for sentencepiece.
    empty = tmp_path / "empty"
    empty.mkdir()
    config_only = tmp_path / "config_only"
    config_only.mkdir()
    (config_only / "config.json").write_text("{}")
    for folder, reason in ((empty, "holds no model"), (config_only, "no weights")):
        out = tmp_path / f"run-{folder.name}"
        cfg = compose_dict("em_llm", "paper", [f"model.path={folder}"])
        with pytest.raises(PreflightError, match=rf"model.path={folder} .*{reason}"):
            execute("em_llm", cfg, out)
        assert not out.exists()


def test_case19_matryoshka_kv_labels_quote_the_ablation_rank_and_the_search_budget():
    _, claims = paper_modules("matryoshka_kv")
    overrides = ["projection.fixed_rank=4", "rank_search.budget=0.5"]
    cfg = to_object(compose_dict("matryoshka_kv", "smoke", overrides))
    labels = table_spec(claims, "smoke", cfg)[1]
    assert labels["fixed_rank"] == "trained at rank 4 only (ablation)"
    assert labels["matryoshka_searched"].endswith("at 50.0%")
    default = to_object(compose_dict("matryoshka_kv", "toy"))
    assert table_spec(claims, "toy", default)[1] == claims.LABELS  # the default's text


def test_case19_matryoshka_kv_a_rank_past_the_head_size_is_refused_naming_its_key():
    # the toy's head size is 16 (model.hidden_size / heads); each kind of rank is checked
    message = refused("matryoshka_kv", ["projection.fixed_rank=17"], "projection.fixed_rank", "toy")
    why = "each rank must be <= 16 (model.hidden_size / heads)"
    assert message == f"projection.fixed_rank=17: {why}"
    message = refused("matryoshka_kv", ["eval.ranks=[2,32]"], "eval.ranks", "toy")
    assert message.startswith("eval.ranks=[2, 32]: each rank must be <= 16")
    ablation_off = ["projection.fixed_rank=17", "methods=[pca,matryoshka]"]
    to_object(compose_dict("matryoshka_kv", "toy", ablation_off))  # a rank no method uses


def test_case15_lucidppn_image_folder_options_are_refused_with_the_toy_data():
    # Was: data.augment=true accepted on the toy birds and silently ignored.
    message = refused("lucidppn", ["data.augment=true"], "data.augment")
    assert "data.name=toy_birds" in message


# ---- issue 52: '+' keys, device and precision switches, keys the scale does not read ---------
# Each case of the table (this part of it) has a test named for it; the generated
# versions over every paper and scale are in tests/test_config_bounds.py.


@pytest.mark.parametrize(
    ("override", "key", "hint"),
    [
        ("+foo=1", "foo", "the config (papers.adamcb.config.Config) has"),
        ("+optim.momentum=0.9", "optim.momentum", "optim (papers.adamcb.config.OptimConfig)"),
    ],
    ids=["foo", "optim_momentum"],
)
def test_plus_key_is_refused_adamcb(override, key, hint):
    # Was: accepted and ignored (Hydra adds the key, OmegaConf set it as a stray attribute).
    message = refused("adamcb", [override], key)
    assert hint in message and "cannot add a key the schema lacks" in message


def test_plus_key_is_refused_qnbo_quadratic_budget_outer_step():
    # Was: 6 steps run, `outer_step: 3` stored beside `outer_steps: 6` in result.json.
    message = refused("qnbo", ["+quadratic.budget.outer_step=3"], "quadratic.budget.outer_step")
    assert "did you mean quadratic.budget.outer_steps?" in message


def test_unknown_key_refusal_no_longer_suggests_adding_it_with_plus():
    # Was: Hydra's "To append to your config use +foo=1", which then ran and ignored it.
    message = refused("adamcb", ["foo=1"], "foo")
    assert "use +" not in message and "cannot add a key" in message


@pytest.mark.parametrize(
    ("slug", "override"),
    [
        ("conformal_bma", "runtime.device=cuda"),
        ("qnbo", "runtime=gpu"),
        ("resdex", "runtime.device=cuda"),
        ("spa", "runtime=gpu"),  # an accelerated paper: refused by the same check
    ],
)
def test_cuda_without_a_visible_device_is_refused(monkeypatch, tmp_path, slug, override):
    # Was: conformal_bma, qnbo and resdex ran on the CPU (result.json saying device: cuda).
    monkeypatch.setattr(config_lib, "cuda_visible", lambda: False)
    message = refused(slug, [override], "runtime.device")
    assert "no CUDA device is visible" in message
    with pytest.raises(ConfigError):  # the entry point: before the run folder
        execute(slug, compose_dict(slug, "smoke", [override]), tmp_path / "run")
    assert not (tmp_path / "run").exists()


CPU_ONLY_PAPERS = [
    "cadcodeverify",
    "conformal_bma",
    "etcd",
    "ppi_ate",
    "qnbo",
    "resdex",
    "t2v_turbo_v2",
]


@pytest.mark.parametrize("slug", CPU_ONLY_PAPERS)
def test_cuda_for_a_cpu_only_paper_is_refused_with_a_device_visible(monkeypatch, slug):
    # Was: these papers' code never moves a tensor to the device; a GPU machine ran them on
    # the CPU. Their Config declares CPU_ONLY, and the shared check refuses the switches.
    monkeypatch.setattr(config_lib, "cuda_visible", lambda: True)
    message = refused(slug, ["runtime=gpu"], "runtime.device")
    assert f"papers.{slug} runs on the CPU only (" in message
    refused(slug, ["runtime.mixed_precision=bf16"], "runtime.mixed_precision")
    to_object(compose_dict("spa", "smoke", ["runtime=gpu"]))  # spa runs on the device


def test_mixed_precision_controlar_fp16_is_refused_on_the_cpu():
    # Was: metrics bit-identical to fp32 (Accelerate ignores fp16 on the CPU).
    message = refused("controlar", ["runtime.mixed_precision=fp16"], "runtime.mixed_precision")
    assert "fp16 autocast needs a CUDA device" in message


def test_mixed_precision_controlar_bf16_is_applied_to_the_training_steps(tmp_path):
    # Was: metrics bit-identical to fp32 (controlar's loss never calls the prepared model's
    # forward, the only thing Accelerate autocasts). shared.loop.fit now runs every
    # compute_loss under accelerator.autocast(): bf16 on the CPU (smoke: test nll 2.1711
    # against fp32's 2.1713), a no-op context at the default "no".
    from accelerate.state import AcceleratorState

    from shared.config import RuntimeConfig, TrainLoopConfig
    from shared.loop import fit
    from shared.runtime import make_accelerator

    seen = {}

    def compute_loss(model, batch):
        out = model(batch)
        seen.setdefault("autocast", torch.is_autocast_enabled("cpu"))
        seen.setdefault("dtype", torch.get_autocast_dtype("cpu"))
        return out.float().square().mean(), {}

    for precision in ("bf16", "no"):
        AcceleratorState._reset_state()  # the precision is fixed per state
        try:
            accelerator = make_accelerator(RuntimeConfig(mixed_precision=precision))
            model = torch.nn.Linear(4, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = accelerator.prepare(model, optimizer)
            seen.clear()
            fit(
                model=model,
                optimizer=optimizer,
                accelerator=accelerator,
                max_steps=1,
                loop=TrainLoopConfig(),
                run_dir=tmp_path / precision,
                next_batch=lambda step: torch.ones(2, 4),
                compute_loss=compute_loss,
                progress=False,
            )
        finally:
            AcceleratorState._reset_state()
        assert seen["autocast"] == (precision == "bf16"), precision
    assert "controlar" not in CPU_ONLY_PAPERS  # its training runs through shared.loop.fit


@pytest.mark.parametrize(
    ("slug", "override", "key", "reader"),
    [
        ("leret", "data.n_test=10", "data.n_test", "model.path set (scale=paper"),
        ("cadcodeverify", "cadprompt.max_items=5", "cadprompt.max_items", "benchmark=cadprompt"),
        (
            "ppi_ate",
            "settings.rct.hidden_covariate=age",
            "settings.rct.hidden_covariate",
            "generator=real",
        ),
    ],
    ids=["leret_data_n_test", "cadcodeverify_cadprompt_max_items", "ppi_ate_rct_hidden_covariate"],
)
def test_unread_key_is_refused(slug, override, key, reader):
    # Was: accepted and ignored (the toy reads world.n_test; the toy benchmark never reads
    # cadprompt.*; the closed-form generator has no covariate to hide).
    message = refused(slug, [override], key)
    assert "this run (scale=smoke) does not read it, only" in message and reader in message


def test_unread_keys_are_accepted_where_read_or_left_as_the_scale_composes_them():
    compose_dict("leret", "paper", ["model.path=/m", "data.n_test=10"])  # a model reads data.*
    compose_dict("leret", "smoke", ["data.n_test=1000"])  # the value smoke composes itself
    compose_dict("cadcodeverify", "paper", ["cadprompt.max_items=5"])
    # real.yaml sets these covariates itself; its generator=real settings read them
    real = compose_dict("ppi_ate", "real", ["settings.hiv.hidden_covariate=age"])
    assert real.settings.hiv.hidden_covariate == "age"


@pytest.mark.parametrize(
    "overrides",
    [["scale=smoke", "+foo=1"], ["-m", "scale=smoke", "epochs=1,-1"]],
    ids=["plus_key", "sweep_with_one_bad_job"],
)
def test_a_refusal_on_the_command_line_is_one_line_and_makes_no_folder(tmp_path, overrides):
    # Was: Hydra made the run folder and its .hydra/ before the task refused the value, and
    # printed a traceback around the one line.
    proc = run_cli(["-m", "papers.adamcb.train", *overrides, f"out_root={tmp_path}/out"], tmp_path)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and re.match(r"(foo|epochs)=", lines[0]), proc.stderr
    assert not (tmp_path / "out").exists()
