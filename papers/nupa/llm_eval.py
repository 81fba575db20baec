"""Answer the benchmark with a pretrained LLM from a local folder (brief Sec. 6).

``python -m papers.nupa.llm_eval --model DIR --benchmark DIR --out predictions.jsonl``

Loads ``AutoModelForCausalLM`` and ``AutoTokenizer`` from ``--model`` (local files only:
nothing is downloaded), prompts with each test question (instruction, inputs and " = "),
decodes greedily with ``max_new_tokens = 2 * digit`` (at least ``--min-new-tokens``), left
padding with pad = eos, batches of 64, as the official ``benchmark_test.py``. Every test
record is written back with a ``prediction`` field, so ``python -m papers.nupa.evaluate
predictions.jsonl`` scores it. The benchmark's test split is already subsampled to 100
questions per (task, digit) by ``generate.py`` (official seed 20222943).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from papers.nupa.data import load_benchmark_split


def load_local_model(model_dir: str | Path, device: str = "cpu"):
    """A causal LM and its tokenizer from a local folder, ready for batched greedy decoding."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").exists():
        raise FileNotFoundError(
            f"{model_dir} holds no model (no config.json); pass the local folder of a "
            "Hugging Face checkpoint (this path never downloads)"
        )
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tokenizer.padding_side = "left"  # decoder-only models continue from the last token
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    return model.to(device).eval(), tokenizer


@torch.no_grad()
def answer(
    model, tokenizer, records: list[dict], batch_size: int = 64, min_new_tokens: int = 4
) -> list[str]:
    """Greedy continuations of each record's question (brief Sec. 6)."""
    outputs: list[str] = []
    for start in range(0, len(records), batch_size):
        chunk = records[start : start + batch_size]
        encoded = tokenizer([r["question"] for r in chunk], return_tensors="pt", padding=True)
        encoded = {k: v.to(model.device) for k, v in encoded.items()}
        new_tokens = max(min_new_tokens, 2 * max(int(r["digit"]) for r in chunk))
        generated = model.generate(
            **encoded,
            max_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
        width = encoded["input_ids"].shape[1]
        outputs += tokenizer.batch_decode(generated[:, width:], skip_special_tokens=True)
    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="local folder of a HF causal LM")
    parser.add_argument("--benchmark", required=True, help="folder written by generate.py")
    parser.add_argument("--out", required=True, help="predictions JSONL to write")
    parser.add_argument("--tasks", nargs="*", help="task names (default: every task file)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    model, tokenizer = load_local_model(args.model, args.device)
    folder = Path(args.benchmark)
    tasks = args.tasks or sorted(p.stem for p in folder.glob("*.jsonl"))
    if not tasks:
        raise SystemExit(f"no task files (*.jsonl) in {folder}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        for task in tasks:
            records = load_benchmark_split(folder, task, "test")
            for record, text in zip(
                records, answer(model, tokenizer, records, args.batch_size), strict=True
            ):
                f.write(json.dumps({**record, "prediction": text}) + "\n")
            print(f"{task}: {len(records)} answered")
    print(f"predictions: {out}\nscore them: python -m papers.nupa.evaluate {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
