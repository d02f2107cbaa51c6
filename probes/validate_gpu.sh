#!/usr/bin/env bash
# GPU validation: the probe matrix on one CUDA or ROCm device, in under 8 minutes.
#
#   bash probes/validate_gpu.sh OUT_DIR
#
# Writes one JSON report per run under OUT_DIR (the schema of probes/report.py), then
# OUT_DIR/summary.md and OUT_DIR/summary.csv from `python -m probes compare`. Every run has
# its own time limit; a run that fails or times out still leaves its report (status error
# or interrupted) and the matrix goes on. Copy the reports to docs/data/validation/ to
# publish them. Run from the repository root with the probes extra installed
# (pip install -e '.[probes]' with a CUDA or ROCm build of torch).
set -u -o pipefail

if [ $# -ne 1 ]; then
    echo "error: usage: bash probes/validate_gpu.sh OUT_DIR" >&2
    exit 2
fi
OUT=$1
PY=${PYTHON:-python}
mkdir -p "$OUT"
START=$SECONDS
BUDGET=450  # seconds: stop starting new runs after this, to finish under 8 minutes

if ! $PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "error: torch sees no CUDA or ROCm device" >&2
    exit 2
fi

failed=0
run() {  # run NAME LIMIT_SECONDS ARGS...: one probe with its own time limit
    local name=$1 limit=$2
    shift 2
    if [ $((SECONDS - START)) -gt $BUDGET ]; then
        echo "skip $name: time budget spent"
        return
    fi
    echo "== $name"
    # SIGTERM at the limit: the probe turns it into an 'interrupted' report
    if ! timeout --kill-after=10 "$limit" $PY -m probes "$@" --device cuda --out "$OUT/$name.json"; then
        echo "   $name did not finish cleanly (see its report)"
        failed=$((failed + 1))
    fi
}

run env 30 env

# exact figures: parameter counts, weights and KV cache on real presets
run weights-qwen2.5-0.5b 60 weights --model qwen2.5-0.5b --format bf16
run weights-llama-3.2-1b 60 weights --model llama-3.2-1b --format bf16
run kv-qwen2.5-0.5b 60 kv-cache --model qwen2.5-0.5b --context 4096 --batch 4 --kv-format bf16
run kv-gemma-2-2b 60 kv-cache --model gemma-2-2b --context 8192 --batch 2 --kv-format bf16

# training-step memory: the CPU bench matrix on the GPU, then two real presets
STEP=(--micro-batch 4 --seq-len 512)
run train-llama-fp32 60 train-step --config tiny-llama "${STEP[@]}"
run train-llama-amp-bf16 60 train-step --config tiny-llama "${STEP[@]}" --precision amp-bf16
run train-llama-lora8 60 train-step --config tiny-llama "${STEP[@]}" --lora-rank 8
run train-qwen2-tied-ckpt 60 train-step --config tiny-qwen2 "${STEP[@]}" --checkpointing full
run train-qwen3-bf16-ckpt 60 train-step --config tiny-qwen3 "${STEP[@]}" --precision bf16 \
    --checkpointing full
run train-gemma2-bf16-eager 60 train-step --config tiny-gemma2 "${STEP[@]}" --precision bf16 \
    --attention eager
run train-mixtral-bf16-fp32-master 60 train-step --config tiny-mixtral "${STEP[@]}" \
    --precision bf16-fp32-master
run train-deepseek-v3-fp32 60 train-step --config tiny-deepseek-v3 "${STEP[@]}"
run train-gpt2-sgd-momentum 60 train-step --config tiny-gpt2 "${STEP[@]}" --optimizer sgd-momentum
run train-qwen2.5-0.5b-bf16-fp32-master 120 train-step --model qwen2.5-0.5b --micro-batch 4 \
    --seq-len 1024 --precision bf16-fp32-master --snapshot "$OUT/snapshot-qwen2.5-0.5b.pickle"
run train-qwen3-0.6b-amp-ckpt 120 train-step --model qwen3-0.6b --micro-batch 8 --seq-len 2048 \
    --precision amp-bf16 --checkpointing full

# OOM path on the real allocator, speed, and correctness probes
run fit-tiny-llama 120 fit --config tiny-llama --seq-len 1024 --memory-limit 2147483648 --max 512
run throughput-qwen2.5-0.5b 120 throughput --model qwen2.5-0.5b --micro-batch 8 --seq-len 1024 \
    --precision amp-bf16 --steps 10 --context 1024 --batch 8 --decode-tokens 64
run accumulation-fp32 60 accumulation --config tiny-llama
run accumulation-bf16 60 accumulation --config tiny-qwen2 --precision bf16
run checkpoint 120 checkpoint --config tiny-llama --omit all

GPUS=$($PY -c 'import torch; print(torch.cuda.device_count())')
for strategy in ddp fsdp; do
    if [ "$GPUS" -ge 2 ] && [ $((SECONDS - START)) -le $BUDGET ]; then
        echo "== $strategy on 2 GPUs"
        timeout --kill-after=10 120 $PY -m torch.distributed.run --standalone \
            --nproc-per-node 2 -m probes train-step --config tiny-llama --strategy "$strategy" \
            --device cuda "${STEP[@]}" --out "$OUT/train-$strategy-2gpu.json" \
            || failed=$((failed + 1))
    fi
done

$PY -m probes compare "$OUT"/*.json --csv "$OUT/summary.csv" > "$OUT/summary.md"
cat "$OUT/summary.md"
echo "$failed run(s) did not finish cleanly; $((SECONDS - START)) s; reports in $OUT"
exit $((failed > 0))
