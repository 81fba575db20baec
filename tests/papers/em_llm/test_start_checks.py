"""EM-LLM's start-time checks (issue 52): a record stream the toy LM's vocabulary does not fit
is refused at compose, before the run folder, not inside train_lm."""

from __future__ import annotations

from tests.helpers import refused_at_start


def test_stream_n_keys_32_is_refused_before_the_run_folder(tmp_path):
    message = refused_at_start("em_llm", "smoke", ["stream.n_keys=32"], tmp_path / "run")
    assert message.startswith("stream.n_keys=32: ")
    assert "set model.vocab_size=69" in message


def test_a_stream_with_its_vocabulary_size_composes():
    from shared.config import compose

    cfg = compose("em_llm", "smoke", ["stream.n_keys=32", "model.vocab_size=69"])
    assert cfg.stream.vocabulary_size() == cfg.model.vocab_size
