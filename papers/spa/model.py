"""Policies: the toy's tiny GPT-2 (brief Sec. 5.2) or a local checkpoint (paper, Sec. 6).

Both are ``transformers`` causal LMs, so the judge, the loss and the loop are the same code at
both scales. Sequences are lists of token ids (prompt, response) collated per minibatch with
right padding and a response mask.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from papers.spa.config import ModelConfig
from papers.spa.data import PROMPT_LENGTH
from papers.spa.method import sequence_log_probs

# keyed by config.DTYPES (a test checks the keys)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def build_toy_policy(cfg: ModelConfig, vocab_size: int, response_length: int):
    """2 layers, d_model 64, 4 heads, FF 256, pre-LN, learned positions, no dropout (~100k)."""
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=PROMPT_LENGTH + response_length,
        n_embd=cfg.n_embd,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_inner=cfg.n_inner,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return GPT2LMHeadModel(config)


def load_local_model(path: str | Path, dtype: str = "float32"):
    """pi_init from a local folder (``from_pretrained``, ``local_files_only``: no download)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        str(path), local_files_only=True, dtype=DTYPES[dtype]
    )


def load_local_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if tokenizer.pad_token_id is None:  # Llama/Mistral tokenizers ship without a pad token
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def collate(
    prompts: list[list[int]], responses: list[list[int]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded prompt + response: input_ids, attention_mask, response_mask (each (B, T))."""
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses, strict=True)]
    width = max(lengths)
    # One torch.tensor call on padded rows and the masks by comparison with the positions:
    # a per-row tensor and slice assignment cost ~7 CPU s of the toy's ~190k collated rows.
    padding = [[pad_id] * (width - n) for n in lengths]
    rows = [p + r + pad for p, r, pad in zip(prompts, responses, padding, strict=True)]
    input_ids = torch.tensor(rows, dtype=torch.long)
    positions = torch.arange(width)
    ends = torch.tensor(lengths)[:, None]
    starts = torch.tensor([len(p) for p in prompts])[:, None]
    attention = positions < ends
    response = (positions >= starts) & attention
    return input_ids, attention, response


def forward_logits(model, input_ids, attention_mask) -> torch.Tensor:
    device = next(model.parameters()).device
    out = model(
        input_ids=input_ids.to(device), attention_mask=attention_mask.to(device), use_cache=False
    )
    return out.logits  # (B, T, V)


@torch.no_grad()
def batched_log_probs(
    model,
    prompts: list[list[int]],
    responses: list[list[int]],
    pad_id: int,
    allowed_tokens: torch.Tensor | None,
    micro_batch: int,
) -> torch.Tensor:
    """Summed response log-probs log pi(y|x) of many (prompt, response) pairs, (N,) on CPU."""
    model.eval()
    values = []
    for start in range(0, len(prompts), micro_batch):
        ids, attention, response = collate(
            prompts[start : start + micro_batch], responses[start : start + micro_batch], pad_id
        )
        logits = forward_logits(model, ids, attention)
        values.append(sequence_log_probs(logits, ids.to(logits.device), response).float().cpu())
    return torch.cat(values) if values else torch.zeros(0)


# ------------------------------------------------------------------ toy: exact enumeration


def _response_log_softmax(logits: torch.Tensor, n_tokens: int) -> torch.Tensor:
    """log-softmax over the response tokens only (prompt-token logits masked out), (B, V)."""
    return torch.log_softmax(logits[:, -1, :n_tokens].double(), dim=-1)


@torch.no_grad()
def enumerate_log_probs(
    model, prompt_ids: torch.Tensor, n_tokens: int, length: int
) -> torch.Tensor:
    """Exact log pi(y|x) of all V^L responses by prefix-tree expansion (brief Sec. 5.3).

    One forward of the prompt, then one token per tree level with the KV cache repeated per
    child: 1 + V + V^2 + ... + V^(L-1) positions per prompt instead of V^L full sequences.

    Args:
        prompt_ids: (P, 3) prompt token ids.

    Returns:
        (P, V^L) float64, responses in :func:`papers.spa.data.all_responses` order.
    """
    model.eval()
    out = model(input_ids=prompt_ids, use_cache=True)
    cache = out.cache
    total = _response_log_softmax(out.logits, n_tokens)  # (P, V)
    for _ in range(length - 1):
        # The P * V^d leaves end in a token not yet fed: repeat each cache row once per
        # child and feed the children's last tokens (child t of node n is n * V + t).
        nodes = total.numel()
        cache.batch_repeat_interleave(n_tokens)
        tokens = torch.arange(n_tokens).repeat(nodes // n_tokens)[:, None]  # (nodes, 1)
        out = model(input_ids=tokens, cache=cache, use_cache=True)
        cache = out.cache
        step = _response_log_softmax(out.logits, n_tokens)  # (nodes, V)
        total = (total.reshape(-1, 1) + step).reshape(prompt_ids.shape[0], -1)
    return total


@torch.no_grad()
def sample_toy_responses(
    model,
    prompt_ids: torch.Tensor,
    n_tokens: int,
    length: int,
    temperature: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Ancestral sampling of fixed-length responses over the response tokens, (N, L)."""
    model.eval()
    out = model(input_ids=prompt_ids, use_cache=True)
    tokens = []
    for position in range(length):
        logits = out.logits[:, -1, :n_tokens].double() / temperature
        token = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)  # (N, 1)
        tokens.append(token)
        if position + 1 < length:
            out = model(input_ids=token, cache=out.cache, use_cache=True)
    return torch.cat(tokens, dim=1)
