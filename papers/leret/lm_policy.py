"""Paper scale: a causal LM writes each hop's search query (brief Sec. 6).

The model (``AutoModelForCausalLM.from_pretrained(local_dir)``) sees the chat template with
the system text "You are a helpful assistant. You must continue the user text directly without
*any* additional interjections." (Gemma: prepended to the user turn) and a user turn holding
the few-shot demos (if any), the context passages retrieved so far, the question, and
"Search query:". Decoding is near-greedy and stops at a newline; only the query string is the
training response (followed by EOS). The same query-policy interface as the toy's pointer
network, so collection, pairs and losses are shared code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from papers.leret.collection import Environment, HopState
from papers.leret.config import ModelConfig

# keyed by config.DTYPE_NAMES (a test checks the keys)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class EncodedText:
    """Prompt and response token ids of N (zero-shot input, query) rows."""

    prompts: list[list[int]]
    responses: list[list[int]]

    def __len__(self) -> int:
        return len(self.prompts)

    def select(self, rows) -> EncodedText:
        rows = [int(r) for r in rows]
        return EncodedText([self.prompts[r] for r in rows], [self.responses[r] for r in rows])


class CausalLMPolicy:
    def __init__(self, module, tokenizer, cfg: ModelConfig, env: Environment):
        self.module, self.tokenizer, self.cfg, self.env = module, tokenizer, cfg, env

    @classmethod
    def from_pretrained(cls, cfg: ModelConfig, env: Environment, query_length: int = 0):
        """Load model and tokenizer from ``cfg.path`` (local files only: nothing downloaded)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(cfg.path, local_files_only=True)
        if tokenizer.pad_token_id is None:  # Llama tokenizers ship without a pad token
            tokenizer.pad_token = tokenizer.eos_token
        module = AutoModelForCausalLM.from_pretrained(
            cfg.path, local_files_only=True, dtype=DTYPES[cfg.dtype]
        )
        return cls(module, tokenizer, cfg, env)

    def with_module(self, module) -> CausalLMPolicy:
        return CausalLMPolicy(module, self.tokenizer, self.cfg, self.env)

    # -- prompts
    def _block(self, state: HopState) -> str:
        task = self.env.task
        passages = [task.documents[d][: self.cfg.max_passage_chars] for d in state.context]
        context = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, start=1)) or "N/A"
        return f"Context:\n{context}\nQuestion: {task.questions[state.question].text}\n"

    def _prompt_ids(self, state: HopState, prompt) -> list[int]:
        demos = prompt or []
        user = "".join(f"{self._block(s)}Search query: {q}\n\n" for s, q in demos)
        user += self._block(state) + "Search query:"
        if self.cfg.system_in_user:
            messages = [{"role": "user", "content": f"{self.cfg.system_prompt}\n\n{user}"}]
        else:
            messages = [
                {"role": "system", "content": self.cfg.system_prompt},
                {"role": "user", "content": user},
            ]
        ids = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        keep = self.cfg.max_length - self.cfg.max_new_tokens  # cut long prompts from the left
        return list(ids)[-keep:]

    # -- decoding
    @torch.no_grad()
    def _generate(self, states, prompt, n: int, temperature: float | None, rng=None):
        self.module.eval()
        device = next(self.module.parameters()).device
        pad = self.tokenizer.pad_token_id
        out = []
        size = self.cfg.micro_batch_size
        for start in range(0, len(states), size):
            chunk = [self._prompt_ids(s, prompt) for s in states[start : start + size]]
            width = max(map(len, chunk))
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, p in enumerate(chunk):  # left padding for generation
                ids[row, width - len(p) :] = torch.tensor(p)
                attention[row, width - len(p) :] = 1
            kwargs = {"do_sample": False}
            if temperature is not None:
                torch.manual_seed(int(rng.integers(2**31)))
                kwargs = {
                    "do_sample": True,
                    "top_p": 1.0,
                    "temperature": max(temperature, self.cfg.min_temperature),
                }
            generated = self.module.generate(
                input_ids=ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=self.cfg.max_new_tokens,
                num_return_sequences=n,
                pad_token_id=pad,
                **kwargs,
            )[:, width:].cpu()
            texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            queries = [t.strip().split("\n")[0].strip() for t in texts]  # stop at newline
            out += [queries[row * n : (row + 1) * n] for row in range(len(chunk))]
        return out

    def sample(self, states, prompt, n: int, temperature: float, rng: np.random.Generator):
        return self._generate(states, prompt, n, temperature, rng) if states else []

    def greedy(self, states, prompt):
        return [qs[0] for qs in self._generate(states, prompt, 1, None)] if states else []

    # -- training: the zero-shot input (no demos) and the query + EOS as response
    def encode(self, states: list[HopState], queries: list[str]) -> EncodedText:
        eos = self.tokenizer.eos_token_id
        prompts = [self._prompt_ids(s, None) for s in states]
        responses = [
            self.tokenizer(q, add_special_tokens=False)["input_ids"][: self.cfg.max_new_tokens]
            + [eos]
            for q in queries
        ]
        return EncodedText(prompts, responses)

    def sequence_log_probs(self, module, batch: EncodedText) -> torch.Tensor:
        """Summed token log-probs of each response given its prompt, (B,)."""
        device = next(module.parameters()).device
        pad = self.tokenizer.pad_token_id
        sequences = [p + r for p, r in zip(batch.prompts, batch.responses, strict=True)]
        width = max(map(len, sequences))
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        attention = torch.zeros_like(ids)
        target = torch.zeros_like(ids, dtype=torch.bool)
        for row, (p, r) in enumerate(zip(batch.prompts, batch.responses, strict=True)):
            ids[row, : len(p) + len(r)] = torch.tensor(p + r)
            attention[row, : len(p) + len(r)] = 1
            target[row, len(p) : len(p) + len(r)] = True
        ids, attention, target = ids.to(device), attention.to(device), target.to(device)
        logits = module(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        log_p = torch.gather(F.log_softmax(logits, -1), 2, ids[:, 1:, None]).squeeze(-1)
        return (log_p * target[:, 1:]).sum(-1)

    # -- queries and prompts
    @staticmethod
    def query_key(query: str) -> str:
        return " ".join(query.lower().split())  # duplicate query strings

    def is_valid(self, query: str) -> bool:
        """A malformed query (empty, or no indexed term) is dropped from the pairs."""
        return bool(self.env.retriever.query_terms(query))

    @staticmethod
    def make_demo(state: HopState, query: str) -> tuple[HopState, str]:
        return state, query

    @staticmethod
    def make_prompt(demos: list, k: int, rng: np.random.Generator) -> list:
        """A few-shot prompt: k demos (DSPy traces) drawn at random."""
        if not demos:
            return []
        picks = rng.choice(len(demos), size=min(k, len(demos)), replace=False)
        return [demos[i] for i in sorted(picks)]
