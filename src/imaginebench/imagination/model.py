"""The rollout language model: a causal LM backbone plus KALM-style numeric adapters.

Numbers enter and leave through new layers beside the token embedding and token head::

    state  (D floats)  --normalise--> Linear(D, H) ------\\
    action (discrete)  -------------> Embedding(A, H) ----+--> inputs_embeds --> decoder --> h
    text token         -------------> token embedding ---/                                  |
                                                                                           v
      next state  <--denormalise-- [anchor state +] Linear(H, D) <--- h  (state head)
      action logits (discrete) / action values (continuous)  <---- Linear(H, A) <--- h
      next token logits  <---- token head (only at text targets)  <---- h

Placeholders in a prompt (see :mod:`~imaginebench.imagination.formats`) are replaced by the
state/action embeddings when ``inputs_embeds`` is built.  States are standardised with the
mean/std of the real data (stored in the checkpoint).  With ``residual_states`` the state
head predicts the *change* from the latest earlier state in the sequence (its "anchor"),
which for a rollout is the current state; the head starts at zero, i.e. "nothing moves".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from imaginebench.imagination.backbones import Backbone
from imaginebench.imagination.formats import ACTION, STATE, TEXT, Batch


@dataclass(frozen=True)
class ModelConfig:
    """How the rollout model is built.

    Attributes:
        backbone: backbone name (``smollm2-135m``, ``tiny``) or a local model folder.
        lora: LoRA fine-tuning (``True``) or full fine-tuning of the backbone (``False``).
        lora_rank: LoRA rank ``r``.
        lora_alpha: LoRA scaling numerator (scale = alpha / r).
        lora_dropout: dropout on the LoRA path.
        num_layers: keep only the first N decoder layers (``None``: all).  Faster on CPU.
        residual_states: the state head predicts the change from the anchor state.
    """

    backbone: str = "smollm2-135m"
    lora: bool = True
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    num_layers: int | None = None
    residual_states: bool = True

    def __post_init__(self) -> None:
        if self.lora_rank < 1:
            raise ValueError(f"lora_rank must be >= 1, got {self.lora_rank}.")
        if self.num_layers is not None and self.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1 or None, got {self.num_layers}.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Normaliser:
    """Per-dimension state statistics of the real data.

    Attributes:
        mean / std: standardisation (``std`` is at least ``MIN_STD``; 1 for constant dims).
        integer: dims whose real values are all integers; generated values are rounded there.
    """

    mean: np.ndarray
    std: np.ndarray
    integer: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    MIN_STD = 1e-3

    @classmethod
    def fit(cls, states: np.ndarray) -> "Normaliser":
        states = np.asarray(states, dtype=np.float64)
        if states.ndim != 2 or len(states) == 0:
            raise ValueError(f"Need a non-empty (N, D) state array to fit the normaliser, got {states.shape}.")
        std = states.std(axis=0)
        std = np.where(std < cls.MIN_STD, np.where(std == 0, 1.0, cls.MIN_STD), std)
        integer = np.all(states == np.round(states), axis=0)
        return cls(mean=states.mean(axis=0).astype(np.float32), std=std.astype(np.float32), integer=integer)

    def to_dict(self) -> dict[str, list]:
        return {"mean": self.mean.tolist(), "std": self.std.tolist(), "integer": self.integer.tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Normaliser":
        return cls(mean=np.asarray(d["mean"], np.float32), std=np.asarray(d["std"], np.float32),
                   integer=np.asarray(d.get("integer", [False] * len(d["mean"])), bool))


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RolloutLM(nn.Module):
    """Backbone + numeric adapters.  See the module docstring for the data flow."""

    def __init__(self, backbone: Backbone, config: ModelConfig, state_dim: int, discrete_actions: bool,
                 action_dim: int, normaliser: Normaliser) -> None:
        super().__init__()
        self.config = config
        self.backbone_name = backbone.name
        self.backbone_pretrained = backbone.pretrained
        self.backbone_source = backbone.source
        self.tokenizer = backbone.tokenizer
        self.state_dim, self.discrete, self.action_dim = int(state_dim), bool(discrete_actions), int(action_dim)
        self.normaliser = normaliser
        if len(normaliser.mean) != self.state_dim:
            raise ValueError(f"Normaliser has {len(normaliser.mean)} dims; the domain has {self.state_dim}.")
        lm = backbone.model
        if config.lora:
            import warnings

            from peft import LoraConfig, get_peft_model

            with warnings.catch_warnings():  # peft 0.21 calls a transformers method deprecated in v5
                warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
                lm = get_peft_model(lm, LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                                                   lora_dropout=config.lora_dropout, target_modules="all-linear"))
        self.lm = lm
        hidden = self._base().config.get_text_config().hidden_size
        self.hidden_size = int(hidden)
        self.state_embed = nn.Linear(self.state_dim, hidden)
        self.action_embed = nn.Embedding(action_dim, hidden) if self.discrete else nn.Linear(action_dim, hidden)
        self.state_head = nn.Linear(hidden, self.state_dim)
        self.action_head = nn.Linear(hidden, action_dim)
        if config.residual_states:
            nn.init.zeros_(self.state_head.weight)
            nn.init.zeros_(self.state_head.bias)
        self.register_buffer("state_mean", torch.as_tensor(normaliser.mean, dtype=torch.float32))
        self.register_buffer("state_std", torch.as_tensor(normaliser.std, dtype=torch.float32))

    # ------------------------------------------------------------------ backbone parts
    def _base(self) -> Any:
        return self.lm.get_base_model() if hasattr(self.lm, "get_base_model") else self.lm

    @property
    def decoder(self) -> Any:
        return self._base().get_decoder()

    @property
    def token_head(self) -> nn.Module:
        return self._base().get_output_embeddings()

    @property
    def token_embed(self) -> nn.Module:
        return self._base().get_input_embeddings()

    @property
    def device(self) -> torch.device:
        return self.state_mean.device

    # ------------------------------------------------------------------ numbers
    def normalise(self, states: torch.Tensor) -> torch.Tensor:
        return (states - self.state_mean) / self.state_std

    def denormalise(self, states: torch.Tensor) -> torch.Tensor:
        return states * self.state_std + self.state_mean

    def embed_states(self, states: torch.Tensor) -> torch.Tensor:
        """Embeddings of raw (unnormalised) states ``(..., D) -> (..., H)``."""
        return self.state_embed(self.normalise(states))

    def embed_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return self.action_embed(actions.long() if self.discrete else actions.float())

    def predict_states(self, hidden: torch.Tensor, anchor_states: torch.Tensor | None) -> torch.Tensor:
        """Normalised next-state predictions from hidden states (``anchor_states`` raw).

        The numeric heads always run in float32, also under bf16 autocast.
        """
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            out = self.state_head(hidden.float())
        if self.config.residual_states:
            if anchor_states is None:
                raise ValueError("residual_states needs the anchor states.")
            out = out + self.normalise(anchor_states)
        return out

    def predict_actions(self, hidden: torch.Tensor) -> torch.Tensor:
        """Action logits (discrete) or action values (continuous)."""
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            return self.action_head(hidden.float())

    # ------------------------------------------------------------------ sequences
    def tensors(self, batch: Batch) -> dict[str, torch.Tensor]:
        """The numpy :class:`Batch` as tensors on the model's device."""
        d = self.device
        return {
            "kinds": torch.as_tensor(batch.kinds, device=d).long(),
            "tokens": torch.as_tensor(batch.tokens, device=d),
            "states": torch.as_tensor(batch.states, device=d),
            "actions": torch.as_tensor(batch.actions, device=d),
            "targets": torch.as_tensor(batch.targets, device=d),
            "anchors": torch.as_tensor(batch.anchors, device=d),
            "mask": torch.as_tensor(batch.mask, device=d),
        }

    def embed(self, kinds: torch.Tensor, tokens: torch.Tensor, states: torch.Tensor,
              actions: torch.Tensor) -> torch.Tensor:
        """``inputs_embeds``: token embeddings with state/action placeholders replaced."""
        text = self.token_embed(tokens)
        st = self.embed_states(states).to(text.dtype)
        ac = self.embed_actions(actions).to(text.dtype)
        k = kinds.unsqueeze(-1)
        return torch.where(k == STATE, st, torch.where(k == ACTION, ac, text))

    def decode(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor | None = None,
               position_ids: torch.Tensor | None = None, past_key_values: Any = None,
               use_cache: bool = False) -> Any:
        """Run the decoder stack (final norm included) on ``inputs_embeds``."""
        return self.decoder(inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                            position_ids=position_ids, past_key_values=past_key_values, use_cache=use_cache)

    def losses(self, batch: Batch, weights: Mapping[str, float] | None = None) -> dict[str, torch.Tensor]:
        """Teacher-forced losses of a right-padded batch.

        Returns ``state`` (MSE of normalised states), ``action`` (cross-entropy, or MSE for
        continuous actions), ``text`` (cross-entropy), the ``n_*`` target counts and
        ``total`` = the weighted sum of the components that have targets.
        """
        t = self.tensors(batch)
        emb = self.embed(t["kinds"], t["tokens"], t["states"], t["actions"])
        hidden = self.decode(emb, attention_mask=t["mask"].long()).last_hidden_state
        weights = {"state": 1.0, "action": 1.0, "text": 1.0, **(weights or {})}
        out: dict[str, torch.Tensor] = {}
        total = hidden.new_zeros((), dtype=torch.float32)
        targets, kinds = t["targets"], t["kinds"]
        for name, kind in (("state", STATE), ("action", ACTION), ("text", TEXT)):
            rows, cols = torch.nonzero(targets & (kinds == kind), as_tuple=True)
            out[f"n_{name}"] = torch.tensor(len(rows))
            if len(rows) == 0:
                continue
            h = hidden[rows, cols - 1]
            if kind == STATE:
                anchor = t["states"][rows, t["anchors"][rows, cols].clamp(min=0)]
                pred = self.predict_states(h, anchor)
                loss = F.mse_loss(pred, self.normalise(t["states"][rows, cols]))
            elif kind == ACTION:
                pred = self.predict_actions(h)
                target = t["actions"][rows, cols]
                loss = F.cross_entropy(pred, target.long()) if self.discrete else F.mse_loss(pred, target.float())
            else:
                logits = self.token_head(h).float()
                loss = F.cross_entropy(logits, t["tokens"][rows, cols])
            out[name] = loss
            total = total + weights[name] * loss
        out["total"] = total
        return out

    def merge_lora(self) -> "RolloutLM":
        """Fold LoRA weights into the backbone for faster inference (no more training/saving)."""
        if hasattr(self.lm, "merge_and_unload"):
            self.lm = self.lm.merge_and_unload()
            self._merged = True
        return self

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """Tensors a checkpoint must hold: everything trainable (all of a random backbone)."""
        if getattr(self, "_merged", False):
            raise RuntimeError("This model's LoRA weights were merged for inference; it cannot be saved.")
        keep = {n for n, p in self.named_parameters() if p.requires_grad or not self.backbone_pretrained}
        return {n: p.detach() for n, p in self.named_parameters() if n in keep}

    def parameter_counts(self) -> dict[str, int]:
        params = list(self.named_parameters())
        return {"total": sum(p.numel() for _, p in params),
                "trainable": sum(p.numel() for _, p in params if p.requires_grad)}
