"""The CLI's public contract: JSON keys and values, and one-line errors with exit 2."""

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators.cli import main
from calculators.commands import DEFAULTS
from calculators.model.presets import load_preset
from tests.cli_helpers import subparser
from tests.strategies import typed_text


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_weights_json_contract(capsys):
    data = run_json(capsys, "weights", "--model", "llama-3.1-8b", "--format", "bf16")
    # 8,030,261,248 parameters: meta-llama/Llama-3.1-8B safetensors metadata.
    assert data["parameters"]["total"] == 8_030_261_248
    assert data["parameters"]["active"] == 8_030_261_248
    assert data["parameters"]["embedding"] == 128_256 * 4096
    assert data["weight_bytes"] == 2 * 8_030_261_248
    assert all(isinstance(data["parameters"][k], int) for k in ("total", "active", "embedding"))


def test_weights_json_reports_moe_active(capsys):
    data = run_json(capsys, "weights", "--model", "mixtral-8x7b")
    # Mixtral-8x7B: 46.7B total, 12.9B active (mistral.ai "Mixtral of experts").
    assert data["parameters"]["total"] == 46_702_792_704
    assert round(data["parameters"]["active"] / 1e9, 1) == 12.9


def test_kv_cache_json_contract(capsys):
    data = run_json(
        capsys, "kv-cache", "--model", "llama-3.1-8b", "--context", "8192", "--batch", "4"
    )
    # 32 layers x 2 x 8 KV heads x 128 head_dim x 2 bytes (config.json of Llama-3.1-8B).
    assert data["bytes_per_token"] == 131_072
    assert data["total_bytes"] == 4 * 8192 * 131_072


def test_kv_cache_honours_windows(capsys):
    data = run_json(capsys, "kv-cache", "--model", "mistral-7b-v0.1", "--context", "32768")
    # Mistral-7B-v0.1: sliding_window 4096 on every layer; the cache stops growing there.
    assert data["bytes_per_token"] == 131_072
    assert data["total_bytes"] == 4096 * 131_072


def test_kv_cache_inverse_questions(capsys):
    data = run_json(
        capsys, "kv-cache", "--model", "llama-3.1-8b", "--context", "8192", "--free-gib", "10"
    )
    # 10 GiB / 128 KiB per token = 81,920 tokens; / (8192 x 128 KiB) = 10 sequences.
    assert data["max_context"] == 81_920
    assert data["max_context_limited_by"] == "memory"
    assert data["max_sequences"] == 10


def test_config_path_reads_like_the_preset(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset("qwen3-8b")))
    a = run_json(capsys, "weights", "--config", str(path))
    b = run_json(capsys, "weights", "--model", "qwen3-8b")
    assert a["parameters"] == b["parameters"]
    assert a["parameters"]["total"] == 8_190_735_360  # Qwen/Qwen3-8B safetensors metadata


def test_envelope_json(capsys):
    data = run_json(
        capsys, "envelope", "--model", "llama-3.1-8b", "--context", "8192", "--gpu", "l40s"
    )
    assert data["total_bytes"] == sum(line["bytes"] for line in data["lines"])
    assert data["headroom_bytes"] == data["visible_bytes"] - data["total_bytes"]
    assert data["fits"] is True
    assert "l40s" in [c["gpu"] for c in data["cards"] if c["fits"]]
    assert (data["context"], data["batch"]) == (8192, 1)
    l40s = next(c for c in data["cards"] if c["gpu"] == "l40s")
    assert (l40s["cards_needed"], l40s["per_card_bytes"]) == (1, l40s["total_bytes"])
    assert l40s["max_context"] >= 8192 and l40s["max_sequences"] >= 1


def test_serve_json(capsys):
    data = run_json(
        capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-model-len", "32768"
    )
    lines = {line["id"]: line["bytes"] for line in data["lines"]}
    assert lines["kv_budget"] == (
        lines["usable"] - lines["weights"] - lines["non_torch"] - lines["activation"]
    )
    assert data["kv_tokens"] == data["blocks"] * 16
    assert data["kv_tokens"] * data["bytes_per_token"] == lines["kv_cache"]
    assert data["starts"] is True and data["error"] is None
    assert data["smallest_tp"] == 1 and data["longest_model_len"] == 131_072
    assert data["warnings"] == []  # a catalog card, a model with no sliding layers


def test_serve_warns_what_it_sizes_unlike_the_runtime(capsys):
    # Gemma 3 (its preset's config, five sliding layers in six): vLLM's hybrid memory
    # allocator sizes sliding layers by their window; the prediction, like the releases
    # before it, does not
    data = run_json(capsys, "serve", "--model", "gemma-3-4b", "--gpu", "l40s")
    assert len(data["warnings"]) == 1 and "hybrid memory allocator" in data["warnings"][0]
    data = run_json(
        capsys, "serve", "--model", "gemma-3-4b", "--gpu", "l40s", "--engine", "vllm-v0"
    )
    assert data["warnings"] == []  # V0 sizes sliding layers like full ones, as predicted
    # A card given by its memory has no name, so vLLM's A100 exception cannot be applied
    data = run_json(capsys, "serve", "--model", "llama-3.1-8b", "--memory-gib", "79.1")
    assert len(data["warnings"]) == 1 and "A100" in data["warnings"][0]
    data = run_json(
        capsys, "serve", "--model", "llama-3.1-8b", "--memory-gib", "79.1",
        "--max-num-batched-tokens", "2048", "--max-num-seqs", "256",
    )  # fmt: skip
    assert data["warnings"] == []
    # V0's defaults follow the length, and below 70 GiB the A100 exception changes nothing
    data = run_json(capsys, "serve", "--model", "llama-3.1-8b", "--memory-gib", "79.1",
                    "--engine", "vllm-v0", "--max-model-len", "8192")  # fmt: skip
    assert data["warnings"] == []
    data = run_json(capsys, "serve", "--model", "llama-3.1-8b", "--memory-gib", "40")
    assert data["warnings"] == []


def test_serve_refuses_a_bad_tp_in_one_line(capsys):
    assert main(["serve", "--model", "llama-3.1-8b", "--tp", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --tp must divide the attention heads")


def test_tables_label_gib(capsys):
    assert main(["envelope", "--model", "gemma-2-9b", "--context", "4096"]) == 0
    out = capsys.readouterr().out
    assert "GiB" in out
    assert " GB " not in out


@pytest.mark.parametrize("command", ["presets", "gpus", "formats"])
def test_listings(capsys, command):
    assert main([command, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


def test_seeds_json(capsys):
    data = run_json(
        capsys,
        "seeds",
        "--a",
        "0.80,0.82,0.79,0.81,0.80",
        "--b",
        "0.82,0.83,0.81,0.84,0.81",
        "--effect",
        "0.5",
        "--sd-difference",
        "1.0",
    )
    assert data["paired"]["mean_difference"] == pytest.approx(0.018)
    assert round(data["paired"]["t_critical"], 3) == 2.776  # NIST t table, df 4
    assert data["paired"]["excludes_zero"] is True
    # G*Power 3.1, matched pairs, dz = 0.5, two tails, alpha 0.05, power 0.8: n = 34
    assert data["seeds_needed"] == 34


def test_throughput_json(capsys):
    data = run_json(
        capsys,
        "throughput",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "8",
        "--mfu",
        "0.4",
        "--tokens",
        "1000000000",
        "--seq-len",
        "8192",
        "--context",
        "4096",
    )
    # PaLM appendix B: 6 x 7,504,924,672 + 12 x 32 layers x 32 heads x 128 x 8192
    assert data["training"]["flops_per_token"] == 6 * 7_504_924_672 + 12 * 32 * 32 * 128 * 8192
    assert data["inference"]["decode_bound"] == "bandwidth"
    assert data["training"]["gpu_hours"] == pytest.approx(data["training"]["seconds"] * 8 / 3600)


def test_training_json_contract(capsys):
    data = run_json(capsys, "training", "--params", "7500000000", "--zero", "1", "--gpus", "64")
    b = data["per_gpu_bytes"]
    assert set(b) == {"parameters", "gradients", "optimizer_states", "activations", "peak"}
    assert all(isinstance(v, int) for v in b.values())
    # ZeRO paper Table 1, P_os on 64 GPUs: 31.4 GB of model states per device.
    assert round((b["parameters"] + b["gradients"] + b["optimizer_states"]) / 1e9, 1) == 31.4
    assert b["activations"] == 0


def test_training_json_with_a_model(capsys):
    data = run_json(
        capsys,
        "training",
        "--model",
        "llama-2-7b",
        "--lora-rank",
        "8",
        "--lora-targets",
        "q_proj,v_proj",
        "--micro-batch",
        "2",
        "--seq-len",
        "1024",
        "--checkpointing",
        "full",
        "--gpu",
        "a100-80gb",
    )
    # peft's print_trainable_parameters for Llama-2-7b, r=8 on q_proj and v_proj.
    assert data["trainable_parameters"] == 4_194_304
    assert data["per_gpu_bytes"]["peak"] == max(p["bytes"] for p in data["phases"])
    assert data["fits"] is True
    assert data["max_micro_batch"] >= 2
    assert data["total_bytes"] == data["per_gpu_bytes"]["peak"] + sum(
        r["bytes"] for r in data["reserves"]
    )


def test_fsdp_is_a_zero_stage(capsys):
    common = ["training", "--params", "1000000000", "--gpus", "8"]
    full = run_json(capsys, *common, "--fsdp", "full-shard")
    zero3 = run_json(capsys, *common, "--zero", "3")
    grad_op = run_json(capsys, *common, "--fsdp", "shard-grad-op")
    zero2 = run_json(capsys, *common, "--zero", "2")
    assert full["per_gpu_bytes"] == zero3["per_gpu_bytes"]
    assert grad_op["per_gpu_bytes"] == zero2["per_gpu_bytes"]


def test_training_table_names_the_peak(capsys):
    assert main(["training", "--model", "gpt2", "--seq-len", "512", "--gpu", "l4"]) == 0
    out = capsys.readouterr().out
    assert "(peak)" in out and "GiB" in out and "Largest micro-batch" in out


def test_budget_phase_from_tokens(capsys):
    data = run_json(
        capsys,
        "budget",
        "--price",
        "2",
        "--gpus",
        "8",
        "--margin",
        "0",
        "--phase",
        "sft:2:tokens=500000000:8",
        "--model",
        "llama-3.1-8b",
        "--mfu",
        "0.4",
    )
    t = run_json(
        capsys,
        "throughput",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "8",
        "--mfu",
        "0.4",
        "--tokens",
        "500000000",
        "--seq-len",
        "4096",
        "--context",
        "16",
    )
    assert data["gpu_hours"] == pytest.approx(2 * t["training"]["gpu_hours"])


def test_batch_json(capsys):
    data = run_json(
        capsys,
        "batch",
        "--micro-batch",
        "4",
        "--gpus",
        "8",
        "--seq-len",
        "2048",
        "--global-batch",
        "256",
    )
    assert data["accumulation_steps"] == 8  # 256 / (4 x 8)
    assert data["sequences_per_update"] == 256
    assert data["tokens_per_update"] == 256 * 2048


def test_budget_json(capsys):
    data = run_json(
        capsys,
        "budget",
        "--phase",
        "experiments:12:6",
        "--gpus",
        "4",
        "--price",
        "2.5",
        "--decisions",
        "3",
        "--package",
        "3:4:700",
    )
    assert data["gpu_hours"] == 90.0  # 15 runs (12 + 3 reruns) x 6 GPU-hours
    assert data["cost_usd"] == 225.0
    assert data["packages"][0]["covers"] is True
    assert data["example_phases"] is False


BAD = [
    (
        ["kv-cache", "--model", "gpt2", "--context", "-4"],
        "context must be a positive integer, got -4",
    ),
    (
        ["kv-cache", "--model", "gpt2", "--context", "0"],
        "context must be a positive integer, got 0",
    ),
    (["kv-cache", "--model", "gpt2", "--context", "8", "--batch", "0"], "batch"),
    (
        ["kv-cache", "--model", "gpt2", "--context", "abc"],
        "--context: must be a whole number, got 'abc'",
    ),
    (
        ["kv-cache", "--model", "gpt2", "--context", "8", "--kv-format", "fp4"],
        "--kv-format must be one of",
    ),
    (["weights", "--model", "gpt2", "--format", "q4"], "format must be one of"),
    (["weights", "--model", "llama-4"], "model must be one of .*'llama-4'"),
    (["envelope", "--model", "gpt2", "--context", "8", "--gpu", "h300"], "'h300'"),
    (["envelope", "--model", "gpt2", "--context", "8", "--reserve", "x"], "ID=VALUE"),
    (["weights"], "--config --model is required"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["seeds"], "give --a and --b"),
    (["budget", "--price", "0"], "--price must be a positive number, got 0"),
    (
        ["budget", "--price", "2", "--phase", "x:1"],
        r"--phase must be NAME:RUNS:GPU_HOURS\[:GPUS\], got 'x:1'",
    ),
    (
        ["budget", "--price", "2", "--phase", "x:a:1"],
        "--phase 'x:a:1': RUNS must be a whole number, got 'a'",
    ),
    (["budget", "--price", "2", "--phase", "x:0:1"], "x: runs must be a positive"),
    (
        ["batch", "--micro-batch", "3", "--gpus", "4", "--seq-len", "8", "--global-batch", "100"],
        "--global-batch 100 is not a multiple",
    ),
    (["batch", "--micro-batch", "0", "--seq-len", "8"], "--micro-batch must be a positive"),
    (
        [
            "batch",
            "--micro-batch",
            "2",
            "--seq-len",
            "8",
            "--accumulation",
            "2",
            "--global-batch",
            "8",
        ],
        "not both",
    ),
    (["throughput", "--model", "gpt2", "--context", "8", "--mfu", "2"], "mfu must be in"),
    (["throughput", "--model", "gpt2", "--context", "8", "--gpus", "0"], "gpus must be a"),
    (["training", "--params", "0"], "params must be a positive integer, got 0"),
    (["training", "--params", "10", "--zero", "5"], "--zero must be one of 0, 1, 2, 3; got 5"),
    (["training", "--params", "10", "--precision", "fp4"], "precision must be one of"),
    (["training", "--params", "10", "--optimizer", "lion"], "optimizer must be one of"),
    (["training", "--model", "gpt2", "--micro-batch", "0"], "--micro-batch must be a positive"),
    (["training", "--model", "gpt2", "--checkpointing", "half"], "checkpointing must be one"),
    (["training", "--model", "gpt2", "--lora-rank", "4", "--lora-targets", "x"], "'x' matches"),
    (["training", "--model", "gpt2", "--base-format", "nf4-dq"], "set lora_rank too"),
    (["training", "--params", "10", "--optimizer", "adafactor"], "needs the model's tensor"),
    (
        ["training", "--params", "10", "--memory-gib", "-1"],
        "--memory-gib must be a positive number of GiB, got -1",
    ),
    (["training", "--params", "10", "--gpu", "h900"], "gpu"),
    (["training"], "one of the arguments --config --model --params is required"),
    (["training", "--params", "9", "--fsdp", "hybrid"], "--fsdp must be full-shard or shard"),
    (["training", "--params", "9", "--fsdp", "full-shard", "--zero", "1"], "is ZeRO-3, but"),
    (["budget", "--price", "2", "--phase", "x:1:tokens=9"], "tokens= needs --model or --config"),
    (["seeds", "--a", "1,2"], "--a and --b must be given together"),
    (["seeds", "--a", "1,x", "--b", "1,2"], "--a must be comma-separated numbers, got '1,x'"),
    (["seeds", "--sd-difference", "0", "--seeds", "5"], "--sd-difference must be a positive"),
    (["seeds", "--sd-difference", "1", "--seeds", "1"], "seeds must be at least 2, got 1"),
    (
        ["seeds", "--sd-difference", "1", "--seeds", "5", "--power", "2"],
        "--power must be a number above alpha",
    ),
]


@pytest.mark.parametrize(("argv", "match"), BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, match):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert re.search(match, lines[0])
    assert captured.out == ""


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"model_type": "llama"', "is not valid JSON"),
        ("[1, 2]", "config must be a JSON object, got list"),
        ('{"model_type": "llama", "hidden_size": 64}', "config key 'vocab_size' is missing"),
        (
            '{"model_type": "llama", "vocab_size": 10, "hidden_size": -64}',
            "config key 'hidden_size' must be a positive integer, got -64",
        ),
    ],
)
def test_bad_config_files(capsys, tmp_path, content, match):
    path = tmp_path / "config.json"
    path.write_text(content)
    assert main(["weights", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert match in err


def test_missing_config_file(capsys, tmp_path):
    assert main(["weights", "--config", str(tmp_path / "absent.json")]) == 2
    assert "cannot be read: No such file or directory" in capsys.readouterr().err


def test_real_process_exits_2_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "calculators", "kv-cache", "--model", "gpt2", "--context", "-4"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == "error: --context must be a positive integer, got -4\n"
    assert "Traceback" not in proc.stderr


# ---- degenerate and extreme input: one error line or a right answer, bounded -----------


def one_error_line(capsys, *argv):
    """Run argv; it must end with exit 2 and one `error:` line on stderr; that line."""
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        # int(value * GIB) on infinity raised OverflowError before
        (["kv-cache", "--model", "gpt2", "--context", "8", "--free-gib", "inf"], "--free-gib"),
        (
            ["kv-cache", "--model", "gpt2", "--context", "8", "--free-gib", "1e300"],
            r"--free-gib must be at most 1,048,576 GiB",
        ),
        (["envelope", "--model", "gpt2", "--context", "8", "--memory-gib", "inf"], "--memory-gib"),
        (
            ["training", "--model", "gpt2", "--memory-gib", "1e300"],
            r"--memory-gib must be at most 1,048,576 GiB",
        ),
        (["envelope", "--model", "gpt2", "--context", "8", "--memory-gib", "0"], "positive"),
        # a phase of 1e300 GPU-hours never finished before
        (["budget", "--price", "1", "--phase", "a:1:1e300"], r"at most 1e\+09, got 1e\+300"),
        # 0 was silently taken as 1, while -3 was refused
        (["batch", "--micro-batch", "1", "--seq-len", "8", "--accumulation", "0"], "--accum"),
        (["seeds", "--effect", "inf", "--sd-difference", "1"], "effect"),
        (
            ["kv-cache", "--model", "gpt2", "--context", "10000000000"],
            "--context must be at most 1,073,741,824",
        ),
    ],
)
def test_extreme_values_are_one_error_line(capsys, argv, match):
    assert re.search(match, one_error_line(capsys, *argv))


def test_a_config_past_plausibility_is_refused_before_allocating(capsys, tmp_path):
    config = load_preset("llama-3.1-8b")
    config["num_hidden_layers"] = 2**40  # built 2^40 layer entries before: MemoryError
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    line = one_error_line(capsys, "weights", "--config", str(path))
    assert "'num_hidden_layers' must be at most 1,024" in line
    assert "1,099,511,627,776" in line


def test_a_long_bad_value_is_quoted_short(capsys):
    line = one_error_line(capsys, "seeds", "--a", "1," * 10_000 + "x", "--b", "1,2")
    assert len(line) < 200 and "characters" in line


def test_long_campaigns_are_summarised_in_bounded_rows(capsys):
    # 100,000 runs of 1,000 GPU-hours on one GPU: 5 million days; one row per day before
    data = run_json(capsys, "budget", "--price", "1", "--phase", "x:100000:1000")
    assert len(data["schedule"]) <= 60
    assert data["schedule_period_days"] % 365 == 0
    assert sum(sum(p.values()) for p in data["schedule"]) == pytest.approx(data["gpu_hours"])
    assert main(["budget", "--price", "1", "--phase", "x:100000:1000"]) == 0
    assert len(capsys.readouterr().out.splitlines()) < 100


def test_whole_numbers_in_scientific_notation(capsys):
    # refused as "not a number" before
    data = run_json(
        capsys, "budget", "--price", "1", "--phase", "a:1:tokens=1e9", "--model", "gpt2"
    )
    assert data["phases"][0]["runs"] == 1
    data = run_json(
        capsys, "envelope", "--model", "gpt2", "--context", "8", "--reserve",
        "runtime_context=1e9",
    )  # fmt: skip
    line = next(x for x in data["lines"] if x["id"] == "runtime_context")
    assert line["bytes"] == 10**9


def test_negative_scores_need_no_equals_sign(capsys):
    # argparse took "-1.2,0.3" for an unknown option before
    data = run_json(capsys, "seeds", "--a", "-1.2,-0.3,-0.5", "--b", "-1.0,-0.1,-0.2")
    assert data["paired"]["seeds"] == 3


def test_context_past_the_model_limit_is_computed_with_a_warning(capsys):
    data = run_json(capsys, "kv-cache", "--model", "gemma-2-2b", "--context", "100000")
    # google/gemma-2-2b config.json: max_position_embeddings 8192
    (warning,) = data["warnings"]
    assert "max_position_embeddings (8,192)" in warning and "100,000" in warning
    assert data["total_bytes"] > 0
    assert (
        run_json(capsys, "kv-cache", "--model", "gemma-2-2b", "--context", "8192")["warnings"] == []
    )
    for argv in (
        ["envelope", "--model", "gemma-2-2b", "--context", "100000"],
        ["throughput", "--model", "gemma-2-2b", "--context", "100000"],
        ["training", "--model", "gemma-2-2b", "--seq-len", "100000"],
    ):
        assert len(run_json(capsys, *argv)["warnings"]) == 1, argv
        assert main(argv) == 0
        assert "WARNING: " in capsys.readouterr().out


def test_weights_rows_add_up_to_the_total_they_sit_under(capsys):
    # DeepSeek-V3's multi-token-prediction layer was in the rows but not in the total
    data = run_json(capsys, "weights", "--model", "deepseek-v3", "--format", "fp8-e4m3-block128")
    assert sum(data["bytes_by_format"].values()) == data["weight_bytes"]
    assert sum(data["bytes_by_category"].values()) == data["weight_bytes"]
    assert sum(data["mtp_bytes_by_format"].values()) == data["mtp_weight_bytes"] > 0


def test_training_text_names_the_card_once(capsys):
    assert main(["training", "--params", "1000000", "--memory-gib", "24"]) == 0
    out = capsys.readouterr().out
    assert "Visible memory on the card given by its memory: 24.00 GiB;" in out
    assert "visible 24.00 GiB" not in out


TYPED = typed_text()


def _flags(command: str) -> list[tuple[str, bool]]:
    """(flag, takes a value) of the subcommand, from the CLI's own parser."""
    out = []
    for action in subparser(command)._actions:
        if action.option_strings and action.dest not in ("help", "json"):
            out.append((action.option_strings[0], action.nargs != 0))
    return out


@settings(max_examples=60, deadline=None)
@given(command=st.sampled_from(sorted(DEFAULTS)), data=st.data())
def test_any_typed_values_give_an_answer_or_one_error_line(command, data):
    """Every path of every subcommand: exit 0 with strict JSON, or exit 2 with one line."""
    argv = [command]
    if "--model" in [flag for flag, _ in _flags(command)] and command != "budget":
        argv += ["--model", data.draw(st.sampled_from(["gpt2", "gemma-2-2b", "mixtral-8x7b"]))]
    flags = _flags(command)
    chosen = data.draw(st.lists(st.sampled_from(flags), max_size=5, unique=True)) if flags else []
    for flag, takes_value in chosen:
        if flag in ("--config", "--model", "--params"):
            continue
        argv += [flag, data.draw(TYPED)] if takes_value else [flag]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main([*argv, "--json"])
    if status == 0:
        json.loads(out.getvalue(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    else:
        assert status == 2
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err.getvalue()
        assert len(lines[0]) < 500


def test_weights_bits_per_parameter_counts_scales_and_float_tensors(capsys) -> None:
    # bf16 is 16 bits for every parameter; NF4 stores 4-bit codes plus an fp32 absmax per
    # 64 weights and keeps the embedding and lm_head in bf16, so more than 4 bits
    bf16 = run_json(capsys, "weights", "--model", "llama-3.1-8b", "--format", "bf16")
    assert bf16["bits_per_parameter"] == 16.0
    nf4 = run_json(capsys, "weights", "--model", "llama-3.1-8b", "--format", "nf4")
    total = nf4["parameters"]["total"]
    assert nf4["bits_per_parameter"] == 8 * nf4["weight_bytes"] / total
    assert 4.5 < nf4["bits_per_parameter"] < 16


def test_useful_cost_json(capsys) -> None:
    data = run_json(
        capsys,
        *("useful-cost", "--model", "llama-3.1-8b", "--context", "8192", "--sequences", "16"),
        *("--gpus", "l40s,h200", "--formats", "bf16,nf4", "--kv-formats", "bf16,fp8"),
        *("--price", "h200=3.5", "--price", "1", "--prefill-chunk", "8192"),
        *("--quality", "bf16=0", "--quality", "nf4/fp8=0.05"),
    )
    ids = [r["id"] for r in data["rows"]]
    # formats, then KV formats, then cards, as given
    assert ids == [
        f"{f}/{k}/{g}" for f in ("bf16", "nf4") for k in ("bf16", "fp8") for g in ("l40s", "h200")
    ]
    row = data["rows"][ids.index("bf16/bf16/h200")]
    # 2 bytes x 8,030,261,248 parameters (meta-llama/Llama-3.1-8B safetensors metadata);
    # 16 sequences x 8192 tokens x 131,072 bytes per token (32 layers x 2 x 8 x 128 x 2)
    assert row["weights_bytes"] == 2 * 8_030_261_248
    assert row["kv_bytes"] == 16 * 8192 * 131_072
    assert row["cards"] == 1 and row["fits"] is True
    assert sum(row["per_card"].values()) == row["per_card_bytes"]
    assert row["price_per_gpu_hour"] == 3.5
    assert data["rows"][ids.index("bf16/bf16/l40s")]["price_per_gpu_hour"] == 1.0
    for r in data["rows"]:
        assert r["cost_per_million_tokens"] == pytest.approx(
            r["price_per_gpu_hour"] * r["cards"] / (r["decode_tokens_per_second"] * 3600) * 1e6
        )
    assert data["rows"][ids.index("nf4/fp8/l40s")]["quality"] == 0.05
    assert data["rows"][ids.index("nf4/bf16/l40s")]["quality"] is None
    cheapest = {c["id"]: c for c in data["cheapest"]}
    assert set(cheapest) == {"bf16", "nf4"}
    for fmt, c in cheapest.items():
        costs = [r["cost_per_million_tokens"] for r in data["rows"] if r["format"] == fmt]
        assert c["cost_per_million_tokens"] == min(costs)
    assert {(r["runtime"], r["id"]) for r in data["reserves"]} == {
        ("cuda", "runtime_context"),
        ("cuda", "allocator_fragmentation"),
        ("cuda", "framework_overhead"),
    }
    assert one_error_line(
        capsys, "useful-cost", "--model", "gpt2", "--context", "8", "--gpus", "h200,h200"
    ).startswith("error: --gpus lists 'h200' twice")


def test_sampling_json(capsys) -> None:
    logits = "2.0,1.0,0.5,-1.0"
    data = run_json(
        capsys,
        *("sampling", "--logits", logits, "--previous", "0,3,3", "--repetition-penalty", "2"),
        *("--top-k", "3", "--labels", "a,b,c,d"),
    )
    assert data["order"] == "transformers"
    assert [s["id"] for s in data["stages"]] == [
        "input",
        "repetition_penalty",
        "temperature",
        "top_k",
        "top_p",
        "min_p",
    ]
    # CTRL with the sign fix, once per token: 2.0 / 2 = 1.0, -1.0 x 2 = -2.0
    assert data["stages"][1]["logits"] == [1.0, 1.0, 0.5, -2.0]
    assert data["penalized"] == [0, 3]
    # top-k 3 keeps every logit >= the 3rd largest (0.5): token 3 is filtered, null in JSON
    assert data["stages"][3]["logits"] == [1.0, 1.0, 0.5, None]
    assert data["probabilities"][3] == 0.0 and data["kept"] == 3
    # softmax of 1, 1, 0.5: e / (2e + e^0.5) for the first two
    from math import exp

    e, half = exp(1.0), exp(0.5)
    assert data["probabilities"][0] == pytest.approx(e / (2 * e + half), rel=1e-12)
    assert abs(sum(data["probabilities"]) - 1.0) < 1e-12
    assert [t["label"] for t in data["top"]] == ["a", "b", "c", "d"]
    assert [s["enabled"] for s in data["stages"]] == [True, True, False, True, False, False]
    llama = run_json(capsys, "sampling", "--logits", logits, "--order", "llama.cpp")
    assert [s["id"] for s in llama["stages"]][-1] == "temperature"
    assert one_error_line(capsys, "sampling", "--logits", logits, "--temperature", "0") == (
        "error: --temperature must be above 0 (transformers refuses 0; for greedy decoding "
        "set top_k to 1), got 0.0"
    )
    assert "--labels must name every token" in one_error_line(
        capsys, "sampling", "--logits", logits, "--labels", "a,b"
    )
    assert "--previous must hold token ids from 0 to 3" in one_error_line(
        capsys, "sampling", "--logits", logits, "--previous", "4"
    )
