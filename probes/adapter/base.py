"""The frozen base and the adapter on it: building the base as transformers does (random
weights from a config, or a local checkpoint's), attaching a PEFT LoRA adapter on the
project's target names, the base's identity recorded next to a saved adapter, and the
guard that refuses an adapter saved for another base.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from calculators.model.spec import ModelSpec
from calculators.training.lora import module_name, wrapped_tensors
from probes.adapter.settings import BNB_FORMATS, AdapterSettings

BASE_RECORD = "kernodeck_base.json"
RECORD_SCHEMA = "kernodeck-adapter-base"
# config.json keys that name or store a model without changing what it computes: the
# name it was loaded under, the library that wrote it, the storage dtype (the probe
# builds the base in --base-format whatever the file says) and the generation cache.
IDENTITY_IGNORED = ("_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# bitsandbytes formats: the transformers BitsAndBytesConfig arguments of each id
BNB_ARGS: dict[str, dict[str, Any]] = {
    "int8": {"load_in_8bit": True},
    "nf4": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
    "nf4-dq": {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
    },
    "fp4": {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
    "fp4-dq": {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "fp4",
        "bnb_4bit_use_double_quant": True,
    },
}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence the deprecation notices transformers 5 raises inside PEFT's own calls
    (`is_gradient_checkpointing`, renamed `is_activation_checkpointing`): they concern
    PEFT's code, not the reader's, and the tests run with warnings as errors."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\..*")
        warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*")
        yield


def libraries() -> tuple[Any, Any]:
    """transformers and peft, or ValueError saying which one to install."""
    try:
        with quiet():
            import peft
            import transformers
    except ImportError as e:
        raise ValueError(
            f"the adapter probe needs transformers and peft installed ({e.name} is missing)"
        ) from None
    return transformers, peft


def quantized_unavailable(s: AdapterSettings, device: str) -> str | None:
    """Why a bitsandbytes base cannot be built here, or None when it can."""
    if s.base_format not in BNB_FORMATS:
        return None
    try:
        import bitsandbytes  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return (
            f"base-format {s.base_format} needs bitsandbytes, which is not installed "
            "(pip install bitsandbytes, on a CUDA machine)"
        )
    if not device.startswith("cuda"):
        return f"base-format {s.base_format}: bitsandbytes' quantized layers run on CUDA here"
    return None


def identity_config(config: dict[str, Any]) -> dict[str, Any]:
    """The config keys that decide the base's shapes and arithmetic."""
    return {k: v for k, v in config.items() if k not in IDENTITY_IGNORED}


def config_sha256(config: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of the identity config:
    two config.json files that differ only in IDENTITY_IGNORED keys or key order hash the
    same; one layer fewer or another hidden size does not."""
    text = json.dumps(identity_config(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def base_record(
    config: dict[str, Any], name: str, s: AdapterSettings, model: nn.Module | None = None
) -> dict[str, Any]:
    """What identifies the base an adapter belongs to: its config's hash, its name, the
    revision where the checkpoint knows it (transformers' `_commit_hash` of a Hub
    download), and for random weights the seed they come from."""
    _, peft = libraries()
    import transformers

    revision = getattr(getattr(model, "config", None), "_commit_hash", None)
    return {
        "schema": RECORD_SCHEMA,
        "version": 1,
        "model_id": name,
        "revision": revision,
        "config_sha256": config_sha256(config),
        "config_keys_ignored": list(IDENTITY_IGNORED),
        "weights": "checkpoint" if s.pretrained else "random",
        "seed": None if s.pretrained else s.seed,
        "base_format": s.base_format,
        "lora_rank": s.lora_rank,
        "lora_alpha": s.alpha if s.lora_rank is not None else None,
        "lora_targets": list(s.lora_targets),
        "peft": peft.__version__,
        "transformers": transformers.__version__,
    }


def read_record(adapter_dir: str) -> dict[str, Any]:
    path = os.path.join(adapter_dir, BASE_RECORD)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except OSError:
        raise ValueError(
            f"adapter {adapter_dir!r} has no {BASE_RECORD}: it does not say which base it "
            "belongs to (save it with `python -m probes adapter --save-adapter DIR`)"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path!r} is not valid JSON: {e}") from None
    if record.get("schema") != RECORD_SCHEMA or "config_sha256" not in record:
        raise ValueError(f"{path!r} is not a {RECORD_SCHEMA} record")
    return record


def verify_base(adapter_dir: str, here: dict[str, Any]) -> dict[str, Any]:
    """Refuse to load the adapter in `adapter_dir` onto the base `here` describes (a
    `base_record`) when the recorded base differs: ValueError naming both hashes. For
    random weights the seed must match too. Returns the adapter's record."""
    saved = read_record(adapter_dir)
    if saved["config_sha256"] != here["config_sha256"]:
        raise ValueError(
            f"adapter {adapter_dir!r} belongs to base {saved.get('model_id')!r} with config "
            f"sha256 {saved['config_sha256']}, not this base {here['model_id']!r} with config "
            f"sha256 {here['config_sha256']}: refused"
        )
    if saved.get("weights") == "random" == here.get("weights") and saved.get("seed") != here.get(
        "seed"
    ):
        raise ValueError(
            f"adapter {adapter_dir!r} belongs to random weights of seed {saved.get('seed')}, "
            f"not seed {here.get('seed')} (config sha256 {here['config_sha256']}): refused"
        )
    return saved


def build_base(
    config: dict[str, Any], s: AdapterSettings, device: str, *, seed: int | None = None
) -> nn.Module:
    """The frozen base in eval mode: transformers' class from the config with seeded random
    weights, or the local checkpoint's; in a torch dtype or, for a bitsandbytes format, a
    random base saved to a temporary folder and loaded back quantized (bitsandbytes
    quantizes while loading)."""
    transformers, _ = libraries()
    seed = s.seed if seed is None else seed
    dtype = DTYPES.get(s.base_format, torch.bfloat16)
    if s.base_format in BNB_FORMATS:
        return _quantized(transformers, config, s, device, dtype, seed)
    if s.pretrained is not None:
        with quiet():
            model = transformers.AutoModelForCausalLM.from_pretrained(
                s.pretrained, dtype=dtype, attn_implementation="sdpa"
            )
        model.to(device)
    else:
        cfg = transformers.AutoConfig.for_model(**config)
        torch.manual_seed(seed)
        with torch.device(device), quiet():
            model = transformers.AutoModelForCausalLM.from_config(
                cfg, dtype=dtype, attn_implementation="sdpa"
            )
    model.config.use_cache = False
    model.eval()  # no dropout: the checks compare outputs
    return model


def _quantized(
    transformers: Any,
    config: dict[str, Any],
    s: AdapterSettings,
    device: str,
    dtype: torch.dtype,
    seed: int,
) -> nn.Module:
    args = dict(BNB_ARGS[s.base_format])
    if args.get("load_in_4bit"):
        args["bnb_4bit_compute_dtype"] = dtype
    quant = transformers.BitsAndBytesConfig(**args)
    with contextlib.ExitStack() as stack:
        folder = s.pretrained
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="kd-base-"))
            cfg = transformers.AutoConfig.for_model(**config)
            torch.manual_seed(seed)
            with quiet():
                transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype).save_pretrained(
                    folder
                )
        with quiet():
            model = transformers.AutoModelForCausalLM.from_pretrained(
                folder, dtype=dtype, quantization_config=quant, device_map={"": device}
            )
    model.config.use_cache = False
    model.eval()
    return model


def expert_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """3-D parameters (experts stacked on dim 0), by full name: transformers 5 stores a
    MoE layer's experts this way (MixtralExperts.gate_up_proj, .down_proj)."""
    return {n: p for n, p in model.named_parameters() if p.dim() == 3}


def fused_names(leaf: str) -> set[str]:
    """The per-projection names a fused expert parameter holds: gate_up_proj holds
    gate_proj and up_proj, down_proj itself (transformers 5's Mixtral and Qwen-MoE)."""
    stem = leaf.removesuffix("_proj")
    return {f"{part}_proj" for part in stem.split("_")}


def peft_targets(spec: ModelSpec, model: nn.Module, targets: tuple[str, ...]) -> dict[str, Any]:
    """The project's targets as PEFT's `target_modules` and `target_parameters`.

    The calculators' `wrapped_tensors` decides what is wrapped, exactly as
    calculators/training/lora.py documents (all-linear: every linear of the decoder
    layers, not lm_head, not the MoE router); each is named here by its module's last
    name, which PEFT matches as a suffix of the module path. A projection the calculators
    count per expert but the built model stores fused in a 3-D parameter is targeted
    through that parameter (PEFT's `target_parameters`, its `ParamWrapper`), which
    adapts the fused matrix with one adapter: the counts check then shows the difference.
    """
    wanted = {module_name(t) for t in wrapped_tensors(spec, targets)}
    linear = {
        name.rsplit(".", 1)[-1]
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and ".layers." in f".{name}"
    }
    modules = sorted(wanted & linear)
    params = sorted(
        {
            n.rsplit(".", 1)[-1]
            for n in expert_parameters(model)
            if fused_names(n.rsplit(".", 1)[-1]) & (wanted - linear)
        }
    )
    if not modules and not params:
        raise ValueError(f"lora-targets {','.join(targets)} match no layer of the built model")
    return {"target_modules": modules, "target_parameters": params}


def attach_adapter(
    model: nn.Module, spec: ModelSpec, s: AdapterSettings, name: str, seed: int
) -> tuple[nn.Module, dict[str, Any]]:
    """PEFT's LoRA on `model` (its base frozen): rank, alpha and the mapped targets; no
    dropout, so that outputs compare exactly. Returns the PeftModel and the targets."""
    _, peft = libraries()
    assert s.lora_rank is not None
    mapped = peft_targets(spec, model, s.lora_targets)
    config = peft.LoraConfig(
        r=s.lora_rank,
        lora_alpha=s.alpha,
        lora_dropout=0.0,
        target_modules=mapped["target_modules"],
        target_parameters=mapped["target_parameters"] or None,
    )
    model.name_or_path = name  # PEFT records it as base_model_name_or_path
    torch.manual_seed(seed)  # lora_A's Kaiming init
    with quiet():
        peft_model = peft.get_peft_model(model, config)
    return peft_model, mapped


def load_adapter(model: nn.Module, adapter_dir: str) -> nn.Module:
    _, peft = libraries()
    with quiet():
        return peft.PeftModel.from_pretrained(model, adapter_dir, is_trainable=False)


def fixed_batch(vocab: int, s: AdapterSettings) -> torch.Tensor:
    """micro_batch x seq_len token ids drawn uniformly from a seeded CPU generator."""
    gen = torch.Generator().manual_seed(s.seed + 100)
    return torch.randint(0, vocab, (s.micro_batch, s.seq_len), generator=gen)


def logits(model: nn.Module, ids: torch.Tensor, device: str) -> torch.Tensor:
    """The model's logits on `ids`, in fp32 on the CPU (no gradient, eval mode)."""
    model.eval()
    with torch.no_grad(), quiet():
        out = model(input_ids=ids.to(device))
    return out.logits.float().cpu()


def parameter_count(p: torch.Tensor) -> int:
    """Elements of one parameter; a bitsandbytes 4-bit parameter packs two per byte of
    its storage, so its numel is half its parameters (as PEFT's own count corrects)."""
    if type(p).__name__ == "Params4bit":
        itemsize = p.quant_storage.itemsize if hasattr(p, "quant_storage") else 1
        return p.numel() * 2 * itemsize
    return p.numel()
