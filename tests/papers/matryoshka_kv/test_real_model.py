"""MatryoshkaKV's real rung on the real pretrained LM (SmolLM2-135M, the ``smollm2`` fixture)
and the real corpus, on a few hundred tokens: exactness at full rank (brief Sec. 3.1), PCA
bases from real text (Sec. 3.2), a few steps of the distillation objective (Sec. 3.4), the
corpus segmentation and the real preflight."""

from __future__ import annotations

import copy

import pytest
import torch

from papers.matryoshka_kv.method import (
    KVProjections,
    cayley,
    distillation_loss,
    pca_basis,
    sample_ranks,
    uniform_ranks,
)
from papers.matryoshka_kv.model import attach_projections, collect_kv_statistics, set_ranks
from papers.matryoshka_kv.train import Corpus, real_preflight, real_segments
from shared import pretrained
from shared.config import REAL_SCALE, compose
from tests.helpers import require_assets

SEGMENT = 96  # tokens per segment: 2 segments, 192 tokens, keep the file within ~30 CPU s
RANK_SCHEDULE = [8, 16, 24, 32, 40, 48, 56, 64]  # configs/matryoshka_kv/real.yaml


@pytest.fixture(scope="module")
def real_text(smollm2):
    """(model, (2, SEGMENT) token ids of the first training document)."""
    require_assets(pretrained.CORPUS_ASSET)
    model, tokenizer = smollm2
    document = next(iter(pretrained.corpus("train").values()))
    ids = torch.tensor(tokenizer(document)["input_ids"][: 2 * SEGMENT]).view(2, SEGMENT)
    return model, ids


@pytest.fixture(scope="module")
def pca_statistics(real_text):
    model, ids = real_text
    return collect_kv_statistics(model, [ids])


def pca_student(model, statistics):
    mean_k, second_k, mean_v, second_v = statistics
    basis_k, _ = pca_basis(mean_k, second_k)
    basis_v, _ = pca_basis(mean_v, second_v)
    projections = KVProjections.from_bases(basis_k, basis_v, mean_k, mean_v)
    student = attach_projections(copy.deepcopy(model), projections)
    student.requires_grad_(False)
    projections.requires_grad_(True)
    return student, projections


def test_pca_bases_of_real_keys_and_values_are_orthonormal(real_text, pca_statistics):
    model, _ = real_text
    config = model.config
    shape = (config.num_hidden_layers, config.num_key_value_heads, 64)
    mean_k, second_k, mean_v, second_v = pca_statistics
    assert mean_k.shape == shape and second_v.shape == (*shape, 64)
    eye = torch.eye(64, dtype=torch.float64)
    for mean, second in ((mean_k, second_k), (mean_v, second_v)):
        basis, eigenvalues = pca_basis(mean, second)
        torch.testing.assert_close(basis.transpose(-1, -2) @ basis, eye.expand_as(basis))
        assert torch.all(torch.linalg.det(basis) > 0)  # Cayley reaches it
        assert torch.all(eigenvalues[..., :-1] >= eigenvalues[..., 1:] - 1e-9)  # descending
        # the Cayley parameters reproduce the basis (float64: the map's own accuracy)
        projections = KVProjections.from_bases(basis, basis, mean, mean, dtype=torch.float64)
        torch.testing.assert_close(projections.all_bases()[0], basis, atol=1e-6, rtol=0)


@torch.no_grad()
def test_full_budget_reproduces_the_real_models_logits(real_text, pca_statistics):
    model, ids = real_text
    student, _ = pca_student(model, pca_statistics)
    full = model(input_ids=ids, use_cache=False).logits
    compressed = student(input_ids=ids, use_cache=False).logits  # ranks d = 64 everywhere
    # float32 over 30 layers: equal up to rounding (logits of size ~10-30, differences of at
    # most a few 1e-2), the same next-token predictions but for near ties
    torch.testing.assert_close(compressed, full, atol=5e-2, rtol=0)
    assert float((compressed.argmax(-1) == full.argmax(-1)).double().mean()) >= 0.99
    log_p, log_q = torch.log_softmax(full.double(), -1), torch.log_softmax(compressed.double(), -1)
    assert float((log_p.exp() * (log_p - log_q)).sum(-1).mean()) < 1e-5
    # and a 25 % budget is not exact: the check above can fail
    set_ranks(student, *uniform_ranks(30, 3, 16))
    truncated = student(input_ids=ids, use_cache=False).logits
    assert (truncated - full).abs().max() > 1.0


def test_a_few_steps_of_the_distillation_objective_lower_it(real_text, pca_statistics):
    """The paper's objective (0.25 KL + 0.75 CE) at Matryoshka-sampled ranks, fixed for the
    test so the loss before and after compares the same compressed model."""
    model, ids = real_text
    student, projections = pca_student(model, pca_statistics)
    set_ranks(student, *sample_ranks(RANK_SCHEDULE, 30, 3, torch.Generator().manual_seed(0)))
    with torch.no_grad():
        teacher_logits = model(input_ids=ids, use_cache=False).logits
    optimizer = torch.optim.AdamW(projections.parameters(), lr=3e-3, weight_decay=0.0)
    losses = []
    for _ in range(2):
        loss, _parts = distillation_loss(
            student(input_ids=ids, use_cache=False).logits, teacher_logits, ids, 0.25, 0.75
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    with torch.no_grad():
        final, _ = distillation_loss(
            student(input_ids=ids, use_cache=False).logits, teacher_logits, ids, 0.25, 0.75
        )
    assert float(final) < 0.95 * losses[0], (losses, float(final))
    # the trained parameters still map to orthogonal bases (Cayley map, in float64)
    basis = cayley(projections.x_key.detach().double())
    eye = torch.eye(64, dtype=torch.float64)
    torch.testing.assert_close(basis.transpose(-1, -2) @ basis, eye.expand_as(basis))


def test_real_segments_stay_inside_documents(smollm2):
    _, tokenizer = smollm2
    documents = {"a": "one two three four five six seven", "b": "eight nine", "c": "ten"}
    segments = real_segments(documents, tokenizer, 3)
    lengths = {name: len(tokenizer(text)["input_ids"]) for name, text in documents.items()}
    assert segments.shape == (sum(n // 3 for n in lengths.values()), 3)
    first = tokenizer(documents["a"])["input_ids"]
    assert segments[0].tolist() == first[:3]
    with pytest.raises(ValueError, match="seq_len=1000"):
        real_segments(documents, tokenizer, 1000)
    with pytest.raises(ValueError, match="seq_len must be >= 2"):
        real_segments(documents, tokenizer, 1)


def test_real_corpus_trains_on_train_documents_and_evaluates_on_test_ones(smollm2):
    require_assets(pretrained.CORPUS_ASSET)
    _, tokenizer = smollm2
    cfg = compose("matryoshka_kv", REAL_SCALE, ["corpus.seq_len=128"])
    corpus = Corpus(cfg, tokenizer)
    test = real_segments(pretrained.corpus("test"), tokenizer, 128)
    assert torch.equal(corpus.pool("eval-0"), test)
    assert torch.equal(corpus.pool("pca-0"), corpus.pool("projection-0-1"))
    evaluation = torch.cat(corpus.batches(12, 4, "eval-0"))
    assert evaluation.shape == (12, 128) and len({tuple(s.tolist()) for s in evaluation}) == 12
    assert torch.equal(evaluation[0], test[0]) and torch.equal(evaluation[-1], test[-1])
    train = {tuple(s.tolist()) for s in corpus.pool("projection-0-1")}
    assert not any(tuple(s.tolist()) in train for s in test)


def test_real_preflight_names_a_setting_that_points_elsewhere():
    cfg = compose("matryoshka_kv", REAL_SCALE)
    assert real_preflight(cfg) == []
    cfg.model.asset, cfg.eval.accuracy = "other_model", False
    problems = real_preflight(cfg)
    assert any("model.asset='other_model'" in p for p in problems)
    assert any("eval.accuracy=false" in p for p in problems)
