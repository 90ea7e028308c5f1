"""The rollout language model: a causal LM backbone plus KALM-style numeric adapters.

Numbers enter and leave through new layers beside the token embedding and token head::

    state  (D floats)  --normalise--> Linear(D, H) ------\\
    action (discrete)  -------------> Embedding(A, H) ----+--> inputs_embeds --> decoder --> h
    text token         -------------> token embedding ---/                                  |
                                                                                           v
      next state  <--denormalise-- [anchor state +] Linear(H, D) <--- h  (state head)
      action logits (discrete) / action values (continuous)  <---- Linear(H, A) <--- h
      end-of-rollout logit  <---- Linear(H, 1) <--- h at a state position   (end head)
      next token logits  <---- token head (only at text targets)  <---- h

Placeholders in a prompt (see :mod:`~imaginebench.imagination.formats`) are replaced by the
state/action embeddings when ``inputs_embeds`` is built.  States are standardised with the
mean/std of the real data (stored in the checkpoint).  With ``residual_states`` the state
head predicts the *change* from the latest earlier state in the sequence (its "anchor"),
which for a rollout is the current state; the head starts at zero, i.e. "nothing moves".

**End head** (``ModelConfig.end_head``): :meth:`RolloutLM.predict_end` maps the hidden state
*at* a state position S_t (the hidden that also predicts the action A_t) to the logit of
"the rollout ends at S_t"; it is trained with binary cross-entropy on the rollout task's state
positions (see :mod:`~imaginebench.imagination.formats`, loss ``end``).  It starts at the
probability :data:`END_PRIOR` everywhere (zero weights), so an untrained model never ends a
rollout at a 0.5 threshold.  Checkpoints saved before it existed load without it
(:attr:`RolloutLM.has_end_head` is ``False``).

**Embedding scale** (``ModelConfig.match_embedding_scale``): freshly initialised numeric
embeddings are rescaled so that their mean output norm equals the mean norm of the backbone's
token-embedding rows.  The default ``nn.Linear``/``nn.Embedding`` initialisations are far
larger: 4.5x (state) and 7.6x (action) SmolLM2-135M's token rows (norm 3.2), 31x and 50x the
``tiny`` backbone's (0.23); see :meth:`RolloutLM.embedding_norms` and
``benchmarks/embedding_scale.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from imaginebench.imagination.backbones import Backbone
from imaginebench.imagination.formats import ACTION, STATE, TEXT, Batch


END_PRIOR = 0.05
"""Initial end-of-rollout probability of the end head (zero weights, bias = logit of this): an
untrained model never ends a rollout by a 0.5 threshold, and early training starts near the
rate of episode ends among the states of real rollouts."""


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
        numeric_layers: *late entry* (``None``: off, every position runs through every
            layer).  With ``k``, state and action positions enter the decoder at its top ``k``
            layers only: the layers below are frozen and run on the text alone (their output
            is cached per distinct text, so a phrasing costs them once per run), LoRA (or full
            fine-tuning) touches only the top ``k``.  The instruction still passes through the
            whole pretrained stack; a numeric position costs ``k`` layers instead of all.  A
            ``k`` at or above the backbone's depth means every layer (no late entry).
        residual_states: the state head predicts the change from the anchor state.
        end_head: a learned end-of-rollout output (:meth:`RolloutLM.predict_end`).
        match_embedding_scale: rescale the initial state/action embeddings to the token
            embeddings' mean norm.
        action_bins: continuous actions only.  ``None``: the action head regresses each action
            dimension (MSE), so generation emits the mean of what the model is unsure between: a
            smoothed-out gait where the real one switches sharply.  ``K``: each dimension is a
            categorical over ``K`` evenly spaced values from -1 to 1 (both ends included;
            cross-entropy), and generation *samples* one value per dimension at the temperature
            (0: the most likely value).  Actions fed back in are the chosen values.
        relations: add the domain's relational facts of a state (:meth:`Domain.relation_features`:
            which cells coincide or touch, equalities a linear embedding cannot express) to its
            embedding through their own zero-initialised linear map, so a warm start from a model
            without them begins exactly where that model was.
        relation_gain: fixed factor on that map's output.  Matched state embeddings have
            columns of norm ~120 (smollm2, ~5 an entry); Adam moves a zero-initialised entry by
            about the learning rate a step, so at gain 1 the facts stayed at ~1% of the state
            embedding after 1,000 steps (session 55, measured).  At 40 they can reach its scale
            in a few hundred steps at the adapter rate (4e-4).
    """

    backbone: str = "smollm2-135m"
    lora: bool = True
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    num_layers: int | None = None
    numeric_layers: int | None = None
    residual_states: bool = True
    end_head: bool = True
    match_embedding_scale: bool = True
    action_bins: int | None = None
    relations: bool = False
    relation_gain: float = 40.0

    LEGACY_DEFAULTS = {"end_head": False, "match_embedding_scale": False, "relation_gain": 1.0}
    """Values of fields missing from configs saved before the field existed."""

    def __post_init__(self) -> None:
        if self.lora_rank < 1:
            raise ValueError(f"lora_rank must be >= 1, got {self.lora_rank}.")
        if self.num_layers is not None and self.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1 or None, got {self.num_layers}.")
        if self.numeric_layers is not None and self.numeric_layers < 1:
            raise ValueError(f"numeric_layers must be >= 1 or None, got {self.numeric_layers}.")
        if self.action_bins is not None and self.action_bins < 2:
            raise ValueError(f"action_bins must be >= 2 or None, got {self.action_bins}.")
        if not self.relation_gain > 0:
            raise ValueError(f"relation_gain must be > 0, got {self.relation_gain}.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ModelConfig":
        """A saved config; fields it lacks (older checkpoints) get :attr:`LEGACY_DEFAULTS`."""
        return cls(**{**cls.LEGACY_DEFAULTS, **dict(d)})


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


SCALE_REFERENCE_TEXT = "Generate a rollout for the following goal: move the object to the target. Rollout:"
"""With late entry, numeric embeddings are scaled to the mean norm of this text's hidden states at
the entry layer (its first position left out: decoders park outsized activations there)."""


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RolloutLM(nn.Module):
    """Backbone + numeric adapters.  See the module docstring for the data flow."""

    def __init__(self, backbone: Backbone, config: ModelConfig, state_dim: int, discrete_actions: bool,
                 action_dim: int, normaliser: Normaliser,
                 relations: Callable[[np.ndarray], np.ndarray | None] | None = None) -> None:
        """``relations``: the domain's :meth:`Domain.relation_features`, needed when
        ``config.relations`` is set."""
        super().__init__()
        self.config = config
        self.backbone_name = backbone.name
        self.backbone_pretrained = backbone.pretrained
        self.backbone_source = backbone.source
        self.tokenizer = backbone.tokenizer
        self.state_dim, self.discrete, self.action_dim = int(state_dim), bool(discrete_actions), int(action_dim)
        self.normaliser = normaliser
        if self.discrete and config.action_bins is not None:
            raise ValueError("action_bins is for continuous actions; this domain's actions are discrete (leave it "
                             "unset).")
        self.action_bins: int | None = None if self.discrete else config.action_bins
        if len(normaliser.mean) != self.state_dim:
            raise ValueError(f"Normaliser has {len(normaliser.mean)} dims; the domain has {self.state_dim}.")
        lm = backbone.model
        total_layers = len(lm.get_decoder().layers)
        self.entry_layer = 0
        """Index of the first decoder layer that sees state/action positions (late entry)."""
        if config.numeric_layers is not None:
            # k >= the depth: numbers see every layer, i.e. no late entry (the tiny test backbone)
            self.entry_layer = max(0, total_layers - config.numeric_layers)
        if config.lora:
            import warnings

            from peft import LoraConfig, get_peft_model

            extra: dict[str, Any] = {}
            if self.entry_layer:  # every linear layer of the top layers (peft wants their names here)
                names = sorted({n.rsplit(".", 1)[-1] for n, m in lm.get_decoder().layers[0].named_modules()
                                if isinstance(m, nn.Linear)})
                extra = {"target_modules": names, "layers_pattern": "layers",
                         "layers_to_transform": list(range(self.entry_layer, total_layers))}
            with warnings.catch_warnings():  # peft 0.21 calls a transformers method deprecated in v5
                warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
                lm = get_peft_model(lm, LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                                                   lora_dropout=config.lora_dropout,
                                                   **{"target_modules": "all-linear", **extra}))
        elif self.entry_layer:
            # full fine-tuning of the top layers only: the text below is cached, so it must not change
            decoder = lm.get_decoder()
            for module in (decoder.embed_tokens, *decoder.layers[:self.entry_layer]):
                module.requires_grad_(False)
        self.lm = lm
        self._views: tuple[Any, Any] | None = None
        self._text_cache: dict[tuple[int, ...], torch.Tensor] = {}
        """Late entry: hidden states at the entry layer of each distinct text, by its token ids."""
        hidden = self._base().config.get_text_config().hidden_size
        self.hidden_size = int(hidden)
        self.state_embed = nn.Linear(self.state_dim, hidden)
        self.action_embed = nn.Embedding(action_dim, hidden) if self.discrete else nn.Linear(action_dim, hidden)
        self.state_head = nn.Linear(hidden, self.state_dim)
        self.action_head = nn.Linear(hidden, action_dim * (self.action_bins or 1))
        self.end_head: nn.Linear | None = nn.Linear(hidden, 1) if config.end_head else None
        self.relations = relations if config.relations else None
        self.relation_embed: nn.Linear | None = None
        if config.relations:
            probe = None if relations is None else relations(np.zeros((1, self.state_dim), np.float32))
            if probe is None:
                raise ValueError("This domain has no relational state features (Domain.relation_features); "
                                 "train without --relations.")
            self.relation_embed = nn.Linear(int(np.shape(probe)[-1]), hidden, bias=False)
            nn.init.zeros_(self.relation_embed.weight)
        if config.residual_states:
            nn.init.zeros_(self.state_head.weight)
            nn.init.zeros_(self.state_head.bias)
        if self.end_head is not None:  # starts at the prior "ends here" probability END_PRIOR
            nn.init.zeros_(self.end_head.weight)
            nn.init.constant_(self.end_head.bias, math.log(END_PRIOR / (1.0 - END_PRIOR)))
        self.register_buffer("state_mean", torch.as_tensor(normaliser.mean, dtype=torch.float32))
        self.register_buffer("state_std", torch.as_tensor(normaliser.std, dtype=torch.float32))
        if self.action_bins is not None:  # the values the bins stand for (not saved: fixed by the config)
            k = torch.arange(self.action_bins, dtype=torch.float64)  # symmetric: -1, 0 (odd K) and 1 exactly
            values = ((2 * k - (self.action_bins - 1)) / (self.action_bins - 1)).float()
            self.register_buffer("action_values", values, persistent=False)
        if config.match_embedding_scale:
            self.match_embedding_scale()

    # ------------------------------------------------------------------ backbone parts
    def _base(self) -> Any:
        return self.lm.get_base_model() if hasattr(self.lm, "get_base_model") else self.lm

    @property
    def decoder(self) -> Any:
        """The stack that positions with numbers run through: the whole decoder, or with late
        entry its top ``numeric_layers`` layers (and the final norm)."""
        if not self.entry_layer:
            return self._base().get_decoder()
        return self._late_views()[1]

    @property
    def late_entry(self) -> bool:
        return bool(self.entry_layer)

    def _late_views(self) -> tuple[Any, Any]:
        """(lower, upper): two views of the one decoder that share its modules.

        ``lower`` runs layers ``[0, entry)`` with no final norm (text only); ``upper`` runs
        layers ``[entry, N)`` and the final norm.  The upper layers' cache slots are renumbered
        from 0 (they only ever run in ``upper``), so a cache built from ``upper.config`` fits.
        The views are not registered submodules: their parameters belong to the decoder.
        """
        if self._views is None:
            import copy

            full = self._base().get_decoder()
            layers = list(full.layers)

            def view(sub: list, final_norm: bool) -> Any:
                v = copy.copy(full)
                v._modules = dict(full._modules)
                v.layers = nn.ModuleList(sub)
                cfg = copy.copy(full.config)
                cfg.num_hidden_layers = len(sub)
                if getattr(cfg, "layer_types", None):
                    first = 0 if sub[0] is layers[0] else self.entry_layer
                    cfg.layer_types = list(cfg.layer_types)[first:first + len(sub)]
                v.config = cfg
                if not final_norm:
                    v.norm = nn.Identity()
                return v

            for i, layer in enumerate(layers[self.entry_layer:]):
                layer.self_attn.layer_idx = i
            object.__setattr__(self, "_views", (view(layers[:self.entry_layer], False),
                                                view(layers[self.entry_layer:], True)))
        return self._views  # type: ignore[return-value]

    @torch.no_grad()
    def entry_text(self, texts: list[tuple[int, ...]]) -> list[torch.Tensor]:
        """Hidden states at the entry layer of each text (token ids), ``(len, H)`` float32.

        The lower layers are frozen, so each distinct text is computed once (batched, right
        padded, positions ``0..len-1``) and cached.  Positions are the text's own: the lower
        layers never see numeric positions, so a text's hidden states do not depend on where
        numbers sit between its pieces.
        """
        missing = sorted({t for t in texts if t not in self._text_cache}, key=len)
        lower = self._late_views()[0]
        for i in range(0, len(missing), 64):
            chunk = missing[i:i + 64]
            length = max(len(t) for t in chunk)
            ids = torch.zeros((len(chunk), length), dtype=torch.long, device=self.device)
            mask = torch.zeros((len(chunk), length), dtype=torch.long, device=self.device)
            for j, t in enumerate(chunk):
                ids[j, :len(t)] = torch.as_tensor(t, device=self.device)
                mask[j, :len(t)] = 1
            pos = torch.arange(length, device=self.device).expand(len(chunk), -1)
            with torch.autocast(device_type=self.device.type, enabled=False):
                emb = self.token_embed(ids).float()
                hidden = lower(inputs_embeds=emb, attention_mask=mask, position_ids=pos).last_hidden_state
            for j, t in enumerate(chunk):
                self._text_cache[t] = hidden[j, :len(t)].float().clone()
        return [self._text_cache[t] for t in texts]

    @torch.no_grad()
    def prompt_kv(self, texts: list[tuple[int, ...]], bf16: bool = False) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
        """Late entry, generation only: each text's keys and values in the top stack, per layer
        ``(key, value)`` of shape ``(1, kv_heads, len, head_dim)``, cached per text.

        A generation prompt is text then the first state; the text part of the top stack then
        depends on the text alone (positions ``0..len-1``), so it is computed once per phrasing
        instead of once per rollout (it was two thirds of CLEVR's generation time).  Only valid
        while the weights do not change: the cache is emptied by :meth:`merge_lora` and by
        switching to training mode.
        """
        cache: dict[Any, Any] = self.__dict__.setdefault("_prompt_kv", {})
        key_of = [(t, bool(bf16)) for t in texts]
        missing = [t for t in dict.fromkeys(key_of) if t not in cache]
        if missing:
            from transformers import DynamicCache

            upper = self.decoder
            hidden = self.entry_text([t for t, _ in missing])
            for (t, use_bf16), h in zip(missing, hidden):
                kv = DynamicCache(config=upper.config)
                pos = torch.arange(len(t), device=self.device).unsqueeze(0)
                with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=use_bf16):
                    upper(inputs_embeds=h.unsqueeze(0), attention_mask=torch.ones_like(pos), position_ids=pos,
                          past_key_values=kv, use_cache=True)
                cache[(t, use_bf16)] = [(layer.keys, layer.values) for layer in kv.layers]
        return [cache[k] for k in key_of]

    def train(self, mode: bool = True) -> "RolloutLM":
        if mode:  # the weights may change from here on: cached prompt keys/values go stale
            self.__dict__.pop("_prompt_kv", None)
        return super().train(mode)

    def _entry_text_embeds(self, kinds: torch.Tensor, tokens: torch.Tensor,
                           mask: torch.Tensor | None) -> torch.Tensor:
        """``(B, L, H)``: each row's text positions filled with its text's entry-layer hidden
        states (zeros elsewhere and on padding)."""
        is_text = kinds == TEXT
        if mask is not None:
            is_text = is_text & mask.bool()
        k_np, t_np = is_text.cpu().numpy(), tokens.cpu().numpy()
        texts = [tuple(int(x) for x in t_np[b][k_np[b]]) for b in range(len(t_np))]
        hidden = self.entry_text(texts)
        out = torch.zeros((*tokens.shape, self.hidden_size), dtype=torch.float32, device=self.device)
        rows, cols = torch.nonzero(is_text, as_tuple=True)
        if len(rows):
            out[rows, cols] = torch.cat(hidden, dim=0)
        return out

    @property
    def token_head(self) -> nn.Module:
        return self._base().get_output_embeddings()

    @property
    def token_embed(self) -> nn.Module:
        return self._base().get_input_embeddings()

    @property
    def device(self) -> torch.device:
        return self.state_mean.device

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> "RolloutLM":
        self._text_cache.clear()  # cached text states live on the old device/dtype
        self.__dict__.pop("_prompt_kv", None)
        return super()._apply(fn, *args, **kwargs)

    # ------------------------------------------------------------------ embedding scale
    @staticmethod
    def _output_norm(layer: nn.Module) -> float:
        """Mean output norm of a numeric embedding layer.

        ``nn.Embedding``: the mean row norm.  ``nn.Linear``: the root mean square output norm
        for zero-mean, unit-variance, uncorrelated inputs (standardised states),
        ``sqrt(||W||_F^2 + ||b||^2)``.
        """
        with torch.no_grad():
            if isinstance(layer, nn.Embedding):
                return float(layer.weight.float().norm(dim=-1).mean())
            sq = layer.weight.float().pow(2).sum()
            if layer.bias is not None:
                sq = sq + layer.bias.float().pow(2).sum()
            return float(sq.sqrt())

    def embedding_norms(self) -> dict[str, float]:
        """Mean vector norms: ``token`` (token-embedding rows), ``state``, ``action`` (see
        :meth:`_output_norm`)."""
        with torch.no_grad():
            if self.entry_layer:  # numbers enter beside the text's hidden states at the entry layer
                ids = tuple(self.tokenizer(SCALE_REFERENCE_TEXT, add_special_tokens=False)["input_ids"])
                token = float(self.entry_text([ids])[0][1:].norm(dim=-1).mean())
            else:
                token = float(self.token_embed.weight.float().norm(dim=-1).mean())
        return {"token": token, "state": self._output_norm(self.state_embed),
                "action": self._output_norm(self.action_embed)}

    def match_embedding_scale(self) -> dict[str, float]:
        """Rescale the state/action embeddings' weights so that their mean output norm equals
        the token embeddings' mean row norm; returns the norms before."""
        before = self.embedding_norms()
        with torch.no_grad():
            for name in ("state", "action"):
                layer = self.state_embed if name == "state" else self.action_embed
                if before[name] > 0:
                    factor = before["token"] / before[name]
                    for p in layer.parameters():
                        p.mul_(factor)
        return before

    # ------------------------------------------------------------------ numbers
    def normalise(self, states: torch.Tensor) -> torch.Tensor:
        return (states - self.state_mean) / self.state_std

    def denormalise(self, states: torch.Tensor) -> torch.Tensor:
        return states * self.state_std + self.state_mean

    def embed_states(self, states: torch.Tensor) -> torch.Tensor:
        """Embeddings of raw (unnormalised) states ``(..., D) -> (..., H)`` (plus their relational
        facts' embedding, :attr:`ModelConfig.relations`)."""
        out = self.state_embed(self.normalise(states))
        if self.relation_embed is not None:  # built only with a relations function (__init__)
            facts = self.relations(states.detach().float().cpu().numpy())
            facts = torch.as_tensor(facts, dtype=out.dtype, device=out.device)
            out = out + self.config.relation_gain * self.relation_embed(facts)
        return out

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
        """Action logits ``(..., n_actions)`` (discrete), action values ``(..., action_dim)``
        (continuous) or, with :attr:`action_bins`, per-dimension logits ``(..., action_dim, K)``
        over :attr:`action_values`."""
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            out = self.action_head(hidden.float())
        if self.action_bins is not None:
            out = out.unflatten(-1, (self.action_dim, self.action_bins))
        return out

    def action_bin_index(self, actions: torch.Tensor) -> torch.Tensor:
        """The bin of each continuous action value (the nearest of :attr:`action_values`; values
        outside [-1, 1] go to the end bins)."""
        if self.action_bins is None:
            raise RuntimeError("This rollout model regresses its actions (ModelConfig.action_bins is None).")
        scaled = (actions.float().clamp(-1.0, 1.0) + 1.0) * (0.5 * (self.action_bins - 1))
        return scaled.round().long()

    @property
    def has_end_head(self) -> bool:
        """Whether this model predicts the end of a rollout (older checkpoints do not)."""
        return self.end_head is not None

    def predict_end(self, hidden: torch.Tensor) -> torch.Tensor:
        """End-of-rollout logits ``(...,)`` (float32) from hidden states ``(..., H)``.

        ``hidden`` must be the decoder output *at* a state position S_t, i.e. the last hidden
        state after feeding S_t's embedding (the same hidden that predicts the action A_t).
        ``sigmoid(logit)`` is the model's probability that the rollout ends at S_t.  In
        generation: feed the state, then call ``predict_end(hidden)`` (and stop the rows whose
        probability passes the chosen threshold) before choosing the next action.  Raises
        ``RuntimeError`` when the model has no end head (``config.end_head`` is ``False``;
        check :attr:`has_end_head`).
        """
        if self.end_head is None:
            raise RuntimeError("This rollout model has no end head (ModelConfig.end_head=False, e.g. an older "
                               "checkpoint); fall back to the domain's success test and the horizon.")
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            return self.end_head(hidden.float()).squeeze(-1)

    # ------------------------------------------------------------------ sequences
    def tensors(self, batch: Batch) -> dict[str, torch.Tensor]:
        """The numpy :class:`Batch` as tensors on the model's device."""
        d = self.device
        out = {
            "kinds": torch.as_tensor(batch.kinds, device=d).long(),
            "tokens": torch.as_tensor(batch.tokens, device=d),
            "states": torch.as_tensor(batch.states, device=d),
            "actions": torch.as_tensor(batch.actions, device=d),
            "targets": torch.as_tensor(batch.targets, device=d),
            "anchors": torch.as_tensor(batch.anchors, device=d),
            "mask": torch.as_tensor(batch.mask, device=d),
        }
        if batch.ends is not None:
            out["ends"] = torch.as_tensor(batch.ends, device=d).long()
        return out

    def embed(self, kinds: torch.Tensor, tokens: torch.Tensor, states: torch.Tensor,
              actions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``inputs_embeds`` of :attr:`decoder`: token embeddings (late entry: the text's hidden
        states at the entry layer) with state/action placeholders replaced.  ``mask`` marks real
        positions (late entry must know where padding is: padding is coded as text)."""
        text = self.token_embed(tokens) if not self.entry_layer else self._entry_text_embeds(kinds, tokens, mask)
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
        continuous actions, or per-dimension cross-entropy with ``action_bins``), ``text``
        (cross-entropy), ``end`` (binary cross-entropy of the end head at labelled state
        positions; only with an end head), the ``n_*`` target counts and ``total`` = the weighted sum of the components that have targets (default weights 1).
        """
        t = self.tensors(batch)
        emb = self.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"])
        hidden = self.decode(emb, attention_mask=t["mask"].long()).last_hidden_state
        weights = {"state": 1.0, "action": 1.0, "text": 1.0, "end": 1.0, **(weights or {})}
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
                if self.discrete:
                    loss = F.cross_entropy(pred, target.long())
                elif self.action_bins is not None:
                    loss = F.cross_entropy(pred.flatten(0, -2), self.action_bin_index(target).flatten())
                else:
                    loss = F.mse_loss(pred, target.float())
            else:
                logits = self.token_head(h).float()
                loss = F.cross_entropy(logits, t["tokens"][rows, cols])
            out[name] = loss
            total = total + weights[name] * loss
        if self.end_head is not None and "ends" in t:
            # The end label of state S_t is read from the hidden state AT S_t (not the one before).
            rows, cols = torch.nonzero(t["ends"] >= 0, as_tuple=True)
            out["n_end"] = torch.tensor(len(rows))
            if len(rows):
                logits = self.predict_end(hidden[rows, cols])
                loss = F.binary_cross_entropy_with_logits(logits, t["ends"][rows, cols].float())
                out["end"] = loss
                total = total + weights["end"] * loss
        out["total"] = total
        return out

    def merge_lora(self) -> "RolloutLM":
        """Fold LoRA weights into the backbone for faster inference (no more training/saving)."""
        if hasattr(self.lm, "merge_and_unload"):
            self.lm = self.lm.merge_and_unload()
            self._merged = True
            object.__setattr__(self, "_views", None)
            self.__dict__.pop("_prompt_kv", None)
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
