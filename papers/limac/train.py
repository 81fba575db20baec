"""LiMAC experiment: ``python -m papers.limac.train [scale=smoke|toy|paper] [key=value ...]``.

Per seed: ToyDroid train and test episodes (paper scale: AndroidControl or AitW converted to
JSONL and embedded once with local CLIP and sentence encoders). Per (method, seed):

* ``act``: AcT with the contrastive (InfoNCE) click head, the contribution;
* ``act_index``: the same AcT with an index (slot) click head, the ablation;
* ``flat``: the monolithic flat classifier (one model predicts the whole action);
* ``random_click``: the stub that always clicks a random element (negative control).

Every model is trained with the same loop (shared.loop.fit: AdamW, one-cycle, clip 1.0) and
evaluated offline with teacher-forced history (Sec. 3.4): type, click and overall accuracy,
the text model called only for predicted input-text / open-app steps.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from papers.limac.claims import LABELS
from papers.limac.config import Config
from papers.limac.data import EpisodeTensors, make_toy_data
from papers.limac.episodes import CLICK_TYPES, TEXT_TYPES
from papers.limac.method import (
    act_loss,
    gated_text_actions,
    relaxed_box_match,
    step_correct,
    text_matches,
)
from papers.limac.model import (
    ActionTransformer,
    FlatClassifier,
    HashedElementEncoder,
    PretrainedElementEncoder,
    RandomClickAgent,
)
from papers.limac.text_model import (
    HFLocalVLM,
    OpenAICompatVLM,
    RecordingTextModel,
    ToyTextModel,
)
from papers.limac.toydroid import ELEMENT_CLASSES, FAMILIES, ICONS
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_packages, missing_paths
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng

METHODS = ("act", "act_index", "flat", "random_click")
STREAM_ORDER = 3
SCREEN_FILE, LATENCY_FILE = "click_scores.json", "latency.json"
PLOT_FILE = "limac_toy.png"


# ------------------------------------------------------------------ data and models


def load_data(cfg: Config, seed: int) -> tuple[EpisodeTensors, EpisodeTensors]:
    """Train and test tensors: ToyDroid for seed, or the local paper-scale data set."""
    if cfg.data.source == "toy":
        return make_toy_data(
            cfg.data.n_train, cfg.data.n_test, seed, cfg.data.n_buckets, cfg.data.test_seed_offset
        )
    from papers.limac.pretrained import load_paper_data  # transformers, PIL: paper scale only

    return load_paper_data(cfg)


def build_model(method: str, cfg: Config, data: EpisodeTensors, seed: int) -> torch.nn.Module:
    """The method's network, initialised from its own seed (independent of run order)."""
    m, x = cfg.model, data.x
    n_types = len(data.types)
    if method == "random_click":
        return RandomClickAgent(n_types, data.types.index("click"), seed)
    torch.manual_seed(seed * 100 + METHODS.index(method))
    n_attrs = x["elem_attrs"].shape[-1]
    if "elem_words" in x:
        encoder = HashedElementEncoder(
            m.d,
            cfg.data.n_buckets,
            x["elem_image"].shape[-1],
            cfg.features.image_hidden,
            n_attrs,
            len(ELEMENT_CLASSES),
        )
    else:
        encoder = PretrainedElementEncoder(
            m.d,
            x["elem_text_vec"].shape[-1],
            x["elem_image"].shape[-1],
            n_attrs,
            cfg.data.n_class_buckets,
        )
    if method == "flat":
        return FlatClassifier(encoder, d=m.d, hidden=m.flat_hidden, n_types=n_types, slots=m.slots)
    return ActionTransformer(
        encoder,
        d=m.d,
        layers=m.layers,
        heads=m.heads,
        ff=m.ff,
        dropout=m.dropout,
        max_steps=m.max_steps,
        n_types=n_types,
        tau=m.tau,
        click_head="index" if method == "act_index" else "contrastive",
        slots=m.slots,
        history=m.history,
    )


def make_text_model(cfg: Config):
    t = cfg.text_model
    if t.kind == "toy":
        return ToyTextModel()
    if t.kind == "hf_local":
        return HFLocalVLM(t.model_dir, t.vlm, t.max_new_tokens, _device(cfg))
    if t.kind == "openai_compat":
        return OpenAICompatVLM(t.base_url, t.model, t.api_key_env)
    raise ValueError(f"text_model.kind must be toy, hf_local or openai_compat, got {t.kind!r}")


def _device(cfg: Config) -> str:
    want = cfg.runtime.device
    return "cuda" if want == "cuda" or (want == "auto" and torch.cuda.is_available()) else "cpu"


# ------------------------------------------------------------------ training


def train_model(
    model, train: EpisodeTensors, cfg: Config, run_dir: Path, accelerator, logger, tags: dict
):
    """AdamW + one-cycle (10% warm-up), clip 1.0, batches of episodes; one forward pass
    trains every step of every episode (teacher forcing through the block-causal mask)."""
    o = cfg.optim
    per_epoch = math.ceil(len(train) / o.batch_size)
    total = per_epoch * o.epochs
    orders = [
        numpy_rng(tags["seed"], STREAM_ORDER, e).permutation(len(train)) for e in range(o.epochs)
    ]
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=o.lr, weight_decay=o.weight_decay, foreach=True
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=o.lr, total_steps=total, pct_start=o.warmup_fraction
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    device = accelerator.device

    def next_batch(step: int):
        epoch, index = divmod(step - 1, per_epoch)
        rows = orders[epoch][index * o.batch_size : (index + 1) * o.batch_size]
        return {k: v.to(device) for k, v in train.batch(rows).items()}

    def compute_loss(net, batch):
        out = net(batch)  # gold types feed the click query (teacher forcing)
        return act_loss(
            out["type_logits"],
            out["click_logits"],
            batch["type_target"],
            batch["click_target"],
            batch["step_mask"],
        )

    fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=total,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: schedule.step(),
        stateful={"schedule": schedule},
        logger=logger,
        tags=tags,
        progress=cfg.runtime.progress,
        desc=f"{tags['method']} s{tags['seed']}",
    )
    return accelerator.unwrap_model(model).eval()


# ------------------------------------------------------------------ evaluation (Sec. 3.4-3.5)


@torch.no_grad()
def predict(model, data: EpisodeTensors, batch_size: int, device: str = "cpu") -> dict:
    """Per episode and step: predicted type, the click under the gold type (click accuracy)
    and under the predicted type (overall accuracy), and the click softmax."""
    model.eval()
    out = {"type": [], "click_gold_type": [], "click_pred_type": [], "click_probs": []}
    seconds, n_steps = 0.0, 0
    for start in range(0, len(data), batch_size):
        rows = list(range(start, min(start + batch_size, len(data))))
        batch = {k: v.to(device) for k, v in data.batch(rows).items()}
        began = time.perf_counter()
        result = model(batch)
        predicted = result["type_logits"].argmax(-1)
        under_predicted = model.click_logits_under(batch, predicted)
        seconds += time.perf_counter() - began
        lengths = batch["step_mask"].sum(1).tolist()
        n_steps += sum(lengths)
        probs = torch.softmax(result["click_logits"], -1)
        for i, n in enumerate(lengths):
            out["type"].append(predicted[i, :n].tolist())
            out["click_gold_type"].append(result["click_logits"][i, :n].argmax(-1).tolist())
            out["click_pred_type"].append(under_predicted[i, :n].argmax(-1).tolist())
            out["click_probs"].append(probs[i, :n].nan_to_num(0.0).cpu())
    out["seconds_per_step"] = seconds / max(n_steps, 1)
    return out


def evaluate(predictions: dict, data: EpisodeTensors, cfg: Config, text_model) -> dict:
    """Type, click (relaxed and strict) and overall accuracy; the gated text calls."""
    e = cfg.eval
    gate = tuple(e.gate_types)
    recorder = RecordingTextModel(text_model)
    box_rule = {"iou_min": e.iou_min, "area_ratio": (e.area_ratio_min, e.area_ratio_max)}
    rows = []  # (family, type_ok, click_ok|None, click_strict|None, overall, overall_strict)
    text_ok_rows, predicted_text = [], 0
    for n, episode in enumerate(data.episodes):
        types = [data.types[k] for k in predictions["type"][n]]
        predicted_text += sum(t in gate for t in types)
        screenshots = [s.screenshot for s in episode.steps]
        texts = gated_text_actions(
            types, recorder, episode.goal, [s.elements for s in episode.steps], screenshots, gate
        )
        for t, step in enumerate(episode.steps):
            gold = step.action
            type_ok = types[t] == gold.type
            click_ok = click_strict = None
            relaxed_under_pred = strict_under_pred = False
            if gold.type in CLICK_TYPES:
                boxes = [el.box for el in step.elements]
                chosen = predictions["click_gold_type"][n][t]
                click_strict = chosen == gold.target
                click_ok = click_strict or relaxed_box_match(
                    boxes[chosen], boxes[gold.target], **box_rule
                )
                under = predictions["click_pred_type"][n][t]
                strict_under_pred = under == gold.target
                relaxed_under_pred = strict_under_pred or relaxed_box_match(
                    boxes[under], boxes[gold.target], **box_rule
                )
            text_ok = gold.type in TEXT_TYPES and text_matches(texts[t], gold.text, e.jaccard_text)
            if gold.type in TEXT_TYPES and type_ok:
                text_ok_rows.append(text_ok)
            overall = step_correct(types[t], gold.type, relaxed_under_pred, text_ok)
            strict = step_correct(types[t], gold.type, strict_under_pred, text_ok)
            rows.append((episode.family, type_ok, click_ok, click_strict, overall, strict))

    def mean(values) -> float:
        values = [float(v) for v in values if v is not None]
        return float(np.mean(values)) if values else float("nan")

    n_steps = len(rows)
    metrics = {
        "type_acc": mean(r[1] for r in rows),
        "click_acc": mean(r[2] for r in rows),
        "click_acc_strict": mean(r[3] for r in rows),
        "overall": mean(r[4] if e.relaxed else r[5] for r in rows),
        "overall_strict": mean(r[5] for r in rows),
        "text_calls": float(len(recorder.calls)),
        "predicted_text_steps": float(predicted_text),
        "gating_mismatch": float(abs(len(recorder.calls) - predicted_text)),
        "text_call_fraction": len(recorder.calls) / max(n_steps, 1),
    }
    if text_ok_rows:  # text steps whose type was predicted right (none for the stub)
        metrics["text_acc"] = mean(text_ok_rows)
    for family in sorted({r[0] for r in rows if r[0]}):
        subset = [r for r in rows if r[0] == family]
        metrics[f"type_acc_{family}"] = mean(r[1] for r in subset)
        metrics[f"click_acc_{family}"] = mean(r[2] for r in subset)
        metrics[f"overall_{family}"] = mean(r[4] for r in subset)
    latency = {
        "model_ms_per_step": 1000 * predictions["seconds_per_step"],
        "text_model_ms_per_call": 1000 * recorder.seconds / max(len(recorder.calls), 1),
        "text_call_fraction": metrics["text_call_fraction"],
    }
    return {"metrics": metrics, "latency": latency}


def screen_record(predictions: dict, data: EpisodeTensors, cfg: Config) -> dict | None:
    """One test screen with the model's click softmax over its elements (for the plot)."""
    family, step = cfg.eval.screen_family, cfg.eval.screen_step
    for n, episode in enumerate(data.episodes):
        if episode.family != family and family:
            continue
        t = step % len(episode.steps)
        s = episode.steps[t]
        probs = predictions["click_probs"][n][t][: len(s.elements)].tolist()
        return {
            "goal": episode.goal,
            "step": t,
            "gold": s.action.target,
            "scores": probs,
            "elements": [
                {"text": el.text, "icon": el.icon, "cls": el.cls, "box": list(el.box)}
                for el in s.elements
            ],
        }
    return None


# ------------------------------------------------------------------ experiment


def check_config(cfg: Config) -> None:
    check_names("methods", cfg.methods, METHODS)


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads TFRecords (the optional `tfrecord` package), two local encoder
    folders and, for hf_local, the text VLM's folder; nothing is downloaded."""
    hint = " (a local path; nothing is downloaded, see configs/limac/paper.yaml)"
    d, f, t = cfg.data, cfg.features, cfg.text_model
    raw = {"androidcontrol": "data.androidcontrol_dir", "aitw": "data.aitw_dir"}
    paths = {
        raw.get(d.source, "data.androidcontrol_dir"): getattr(d, f"{d.source}_dir", None),
        "data.work_dir": d.work_dir,
        "features.image_encoder_dir": f.image_encoder_dir,
        "features.text_encoder_dir": f.text_encoder_dir,
    }
    problems = []
    if d.work_dir and (Path(d.work_dir) / "episodes.jsonl").exists():
        paths.pop(raw.get(d.source, "data.androidcontrol_dir"))  # converted already
    else:
        problems += missing_packages({"tfrecord": "pip install 'tfrecord>=1.14' (the paper extra)"})
    if d.work_dir and not Path(d.work_dir).exists():
        paths.pop("data.work_dir")  # created on first use
    if t.kind == "hf_local":
        paths["text_model.model_dir"] = t.model_dir
    elif t.kind == "openai_compat" and not t.base_url:
        problems.append("text_model.base_url is not set")
    return missing_paths(paths, hint) + problems


def run(cfg: Config, out_dir: Path):
    check_config(cfg)
    out_dir = Path(out_dir)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    text_model = make_text_model(cfg)
    cache: dict[int, tuple[EpisodeTensors, EpisodeTensors]] = {}

    def data_for(seed: int):
        if seed not in cache:
            cache.clear()  # one seed's data at a time
            cache[seed] = load_data(cfg, seed)
        return cache[seed]

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        train, test = data_for(seed)
        model = build_model(method, cfg, train, seed)
        if any(p.requires_grad for p in model.parameters()):
            model = train_model(
                model, train, cfg, run_dir, accelerator, logger, {"method": method, "seed": seed}
            )
        device = str(accelerator.device)
        predictions = predict(model.to(device), test, cfg.eval.batch_size, device)
        evaluation = evaluate(predictions, test, cfg, text_model)
        metrics = evaluation["metrics"]
        metrics["parameters"] = float(sum(p.numel() for p in model.parameters()))
        if accelerator.is_main_process:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / LATENCY_FILE).write_text(json.dumps(evaluation["latency"]))
            screen = screen_record(predictions, test, cfg)
            if screen is not None:
                (run_dir / SCREEN_FILE).write_text(json.dumps(screen))
        return RunOutput(metrics)

    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    if accelerator.is_main_process:
        print_families(results)
        print_latency(out_dir, cfg)
        plot(results, out_dir, cfg, out_dir / PLOT_FILE)
    return results


def print_families(results) -> None:
    """Type / click / overall accuracy per model and task family, mean over seeds."""
    print("\ntype / click / overall accuracy per task family, mean over seeds:")
    header = "  " + f"{'model':<34}" + "".join(f"{f:>22}" for f in FAMILIES)
    print(header)
    for method, metrics in results.items():
        cells = []
        for family in FAMILIES:
            keys = (f"type_acc_{family}", f"click_acc_{family}", f"overall_{family}")
            if not all(k in metrics for k in keys):
                cells.append(f"{'-':>22}")
                continue
            values = [
                np.nanmean(metrics[k]) if np.isfinite(metrics[k]).any() else np.nan for k in keys
            ]
            cells.append(f"{' / '.join(f'{v:.2f}' for v in values):>22}")
        print(f"  {LABELS.get(method, method):<34}" + "".join(cells))


def print_latency(out_dir: Path, cfg: Config) -> None:
    """The speed argument of the paper is the gating: per evaluation step, the model's
    latency, the text model's latency per call and the fraction of steps that call it."""
    print("\nlatency per evaluation step (mean over seeds; wall clock, not part of the claims):")
    for method in cfg.methods:
        records = []
        for seed in cfg.seeds:
            path = out_dir / "runs" / f"{method}-s{seed}" / LATENCY_FILE
            if path.exists():
                records.append(json.loads(path.read_text()))
        if not records:
            continue
        model_ms = np.mean([r["model_ms_per_step"] for r in records])
        text_ms = np.mean([r["text_model_ms_per_call"] for r in records])
        fraction = np.mean([r["text_call_fraction"] for r in records])
        print(
            f"  {LABELS.get(method, method):<34} model {model_ms:7.3f} ms/step, "
            f"text model {text_ms:7.4f} ms/call, called on {fraction:.1%} of steps"
        )


def plot(results, out_dir: Path, cfg: Config, path: Path) -> None:
    """Left: type / click / overall accuracy per model (mean ± std over seeds). Right: one
    test screen, each element shaded by AcT's click softmax (gold target outlined)."""
    fig, (ax, screen_ax) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=80)
    metrics = ("type_acc", "click_acc", "overall")
    width = 0.8 / max(len(results), 1)
    for k, (method, values) in enumerate(results.items()):
        means = [np.nanmean(values[m]) for m in metrics]
        stds = [np.nanstd(values[m]) for m in metrics]
        xs = np.arange(len(metrics)) + (k - (len(results) - 1) / 2) * width
        ax.bar(xs, means, width, yerr=stds, label=LABELS.get(method, method), capsize=2)
    ax.set_xticks(np.arange(len(metrics)), ["type", "click (gold type)", "overall"])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"test accuracy, mean over seeds {list(cfg.seeds)}")
    ax.legend(frameon=False, fontsize=7, loc="lower left")
    ax.grid(axis="y", alpha=0.3)
    draw_screen(screen_ax, out_dir / "runs" / f"act-s{cfg.seeds[0]}" / SCREEN_FILE)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_screen(ax, path: Path) -> None:
    ax.set_xlim(0, 1)
    ax.set_ylim(1, 0)  # screen coordinates: y grows downwards
    ax.set_xticks([])
    ax.set_yticks([])
    if not path.exists():
        ax.set_title("(no AcT run to draw)")
        return
    screen = json.loads(path.read_text())
    scores = np.asarray(screen["scores"])
    best = int(scores.argmax()) if scores.size else -1
    for i, element in enumerate(screen["elements"]):
        x0, y0, x1, y1 = element["box"]
        colour = plt.cm.Reds(0.15 + 0.85 * scores[i])
        edge = "green" if i == screen["gold"] else "grey"
        ax.add_patch(
            plt.Rectangle(
                (x0, y0),
                x1 - x0,
                y1 - y0,
                facecolor=colour,
                edgecolor=edge,
                linewidth=2.5 if edge == "green" else 0.8,
            )
        )
        label = element["text"] or f"[{element['icon'] if element['icon'] in ICONS else 'icon'}]"
        mark = " <- argmax" if i == best else ""
        ax.text(
            x0 + 0.005, (y0 + y1) / 2, f"{label} {scores[i]:.2f}{mark}", fontsize=6, va="center"
        )
    ax.set_title(
        f"AcT click softmax, test screen (step {screen['step']}); green = gold\n"
        f"goal: {screen['goal']}",
        fontsize=7,
    )


if __name__ == "__main__":
    main("limac")
