"""The validation page's tables and charts: public startup logs against the predictor
(`calculators.serving.logs`), as Markdown with inline SVG for the site's hook."""

from __future__ import annotations

from html import escape

from calculators.serving.logs import (
    KNOWN_MISSES,
    LINES,
    TOLERANCES,
    Comparison,
    LineSummary,
    compare,
    error_summary,
    load_records,
)
from calculators.serving.runtimes import (
    NON_TORCH,
    RUNTIMES,
    SAMPLER_BYTES_PER_LOGIT,
    vllm_batch_defaults,
)
from calculators.serving.sglang_logs import SGLangCheck, sglang_checks
from calculators.serving.sglang_pool import PoolCheck, pool_checks
from calculators.web.render import bar_chart_svg

_LINE_NAMES = {
    "weights": "weights per rank",
    "non_torch": "non-torch memory",
    "activation": "activation peak",
    "kv_budget": "KV budget",
    "kv_tokens": "KV tokens",
    "kv_tokens_from_logged_budget": "KV tokens from the logged budget (layout check)",
    "max_concurrency": "maximum concurrency",
}


def _figure(svg: str, caption: str) -> str:
    """A chart in the site's figure frame, with its caption below."""
    return f'<figure class="kd-figure">{svg}<figcaption>{escape(caption)}</figcaption></figure>\n'


def _cell(text: object) -> str:
    return escape(str(text)).replace("|", "\\|")


def _value(x: float, unit: str) -> str:
    if unit == "GiB":
        return f"{x:,.2f} GiB"
    if unit == "tokens":
        return f"{x:,.0f}"
    return f"{x:.2f}x"


def _signed(x: float, unit: str) -> str:
    shown = _value(abs(x), unit)
    zero = shown == _value(0.0, unit)  # an error that rounds to zero gets no sign
    sign = "" if zero else ("+" if x > 0 else "-")
    return sign + shown


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def _tolerance(line: str) -> str:
    if line in TOLERANCES:
        rel, absolute = TOLERANCES[line]
        return f"{100 * rel:g}%" + (f" or {absolute:g} GiB" if absolute else "")
    if line == "kv_tokens_from_logged_budget":
        return "one block plus the log's rounding"
    return "none stated"


def summary_markdown(rows: list[LineSummary]) -> str:
    out = [
        "| line | records | median error | largest error | median relative | largest "
        "relative | tolerance | within |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for s in rows:
        within = f"{s.within} of {s.held}" if s.held else ""
        out.append(
            f"| {_LINE_NAMES[s.line]} | {s.records} | {_value(s.median_abs_error, s.unit)} | "
            f"{_value(s.max_abs_error, s.unit)} | {_pct(s.median_abs_relative)} | "
            f"{_pct(s.max_abs_relative)} | {_tolerance(s.line)} | {within} |"
        )
    return "\n".join(out)


def _pair(c: Comparison, line: str) -> str:
    """Logged / predicted, the signed error (predicted - logged) and the tolerance mark."""
    e = c.line(line)
    if e is None:
        return ""
    mark = "" if e.within is None else (" ✓" if e.within else " ✗")
    return (
        f"{_value(e.logged, e.unit)} / {_value(e.predicted, e.unit)} "
        f"({_signed(e.error, e.unit)}){mark}"
    )


IN_SAMPLE = "†"


def records_markdown(comparisons: list[Comparison]) -> str:
    out = [
        "| record | model | card, TP | runtime | weights | non-torch | activation peak | "
        "KV budget | KV tokens | concurrency | verdict |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in comparisons:
        r = c.record
        version = r.get("engine_version") or "version not stated"
        logged_fail = r.get("logged_outcome") == "failed"
        if c.predicted is None:
            verdict = "weights only (card's total not known)"
        else:
            verdict = "starts" if c.predicted.starts else "refuses"
            verdict += " (logged: refused)" if logged_fail else " (logged: started)"
        cells = " | ".join(_pair(c, line) for line in LINES)
        mark = f" {IN_SAMPLE}" if c.in_sample else ""
        out.append(
            f"| [{_cell(c.id)}]({r['source']}){mark} | {_cell(r['model'])} | "
            f"{_cell(r['gpu'])}, {r['tensor_parallel_size']} | "
            f"{_cell(RUNTIMES[r['engine']].name)} {_cell(version)} | {cells} | {verdict} |"
        )
    return "\n".join(out)


def known_misses_markdown(comparisons: list[Comparison]) -> str:
    """Each record outside a tolerance, the line it misses and why."""
    out = []
    for c in comparisons:
        if c.id not in KNOWN_MISSES:
            continue
        line, why = KNOWN_MISSES[c.id]
        e = c.line(line)
        error = "" if e is None else f" ({_signed(e.error, e.unit)}, {_pct(e.relative)})"
        out.append(
            f"- [{_cell(c.id)}]({c.record['source']}), {_LINE_NAMES[line]}{error}: {_cell(why)}."
        )
    return "\n".join(out)


_CHART_FORMATS = {
    "GiB": (lambda v: f"{v:,.2f} GiB", "GiB"),
    "tokens": (lambda v: f"{v:,.0f}", "tokens"),
    "x": (lambda v: f"{v:.2f}x", "requests of max_model_len"),
}


def _chart(comparisons: list[Comparison], line: str, title: str) -> str:
    bars, unit = [], "GiB"
    for c in comparisons:
        e = c.line(line)
        if e is not None:
            bars.append((f"{c.id} ({_signed(e.error, e.unit)})", abs(e.error)))
            unit = e.unit
    if not bars:
        return ""
    bars.sort(key=lambda b: b[1])
    value_format, unit_label = _CHART_FORMATS[unit]
    return bar_chart_svg(
        bars,
        title=title,
        value_format=value_format,
        unit_label=f"absolute error, {unit_label} (the label gives its sign: + predicted "
        "above logged)",
    )


def quoted_markdown(comparisons: list[Comparison]) -> str:
    out = []
    for c in comparisons:
        r = c.record
        flags = _flags(r)
        out.append(f'??? quote "{_cell(c.id)}: {_cell(r["model"])} on {_cell(r["gpu"])}"\n')
        out.append(f"    Source: <{r['source']}> ({_cell(r.get('source_comment', ''))}). ")
        total = "unknown" if c.total_bytes is None else f"{c.total_bytes / 2**30:,.2f} GiB"
        out.append(f"    Flags: {_cell(flags)}; total memory {total} ({c.total_source}).\n")
        if r.get("note"):
            out.append(f"    {_cell(r['note'])}\n")
        out.append("    ```text")
        out += [f"    {line}" for line in r["quoted_lines"]]
        out.append("    ```\n")
    return "\n".join(out)


def _flags(r: dict) -> str:
    """The memory flags as the record gives them, or why they are not known."""
    flags = r.get("flags")
    if flags is None:
        return "not known: " + r.get("flags_note", "")
    shown = ", ".join(f"{k}={v}" for k, v in flags.items() if v is not None and k != "other")
    return shown or "defaults"


def not_modelled_markdown(rows: list[dict]) -> str:
    out = [
        "| record | model | card, TP | version | flags | why it is not compared |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| [{_cell(r['id'])}]({r['source']}) | {_cell(r['model'])} | {_cell(r['gpu'])}, "
        f"{r['tensor_parallel_size']} | {_cell(r.get('engine_version') or 'not stated')} | "
        f"{_cell(_flags(r))} | {_cell(r['reason'])} |"
        for r in rows
    ]
    return "\n".join(out)


def sglang_markdown(checks: list[SGLangCheck], launches: list[dict]) -> str:
    """SGLang's logged pool against its rule: from logged memory, and end to end."""
    out = [
        "Each check sets the pool SGLang logs (`#tokens`) against a prediction: **from "
        "logged memory** (the free memory it logs before and after loading the weights, "
        "and its fraction: logged, or SGLang's rule for a launch of 0.5.3 or later), within "
        "what the logs' two decimals leave open; and **end to end** (the serve calculator "
        "from the model, the catalog card and the TP size alone), within the KV-budget "
        "tolerance of the vLLM records (5% or 0.3 GiB).\n",
        "| record | model | TP | check | fraction | logged tokens | predicted | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| [{_cell(c.id)}]({c.source}) | {_cell(c.model)} | {c.tp} | {c.kind} | "
        f"{c.fraction:g} ({c.fraction_source}) | {c.logged_tokens:,} | "
        f"{c.predicted_tokens:,} | {c.error_tokens:+,} ({c.relative:+.2%}, "
        f"{c.error_gib:+.3f} GiB) {'✓' if c.within else '✗'} |"
        for c in checks
    ]
    checked = {c.id for c in checks}
    out += ["", "Launches without these checks, and why:", ""]
    out += [
        f"- [{_cell(r['id'])}]({r['source']}): {_cell(r['not_compared'])}"
        for r in launches
        if r["id"] not in checked and r.get("not_compared")
    ]
    out += [
        f"- [{_cell(r['id'])}]({r['source']}), the other check: {_cell(r['not_compared'])}"
        for r in launches
        if r["id"] in checked and r.get("not_compared")
    ]
    return "\n".join(out)


def _short_model(repo: str) -> str:
    """A chart label's model: the repository's name without its chat suffix."""
    return repo.split("/")[-1].removesuffix("-Instruct").removesuffix("-it")


def sglang_chart(checks: list[SGLangCheck]) -> str:
    """The checks' errors as bars: |predicted - logged| as a share of the logged pool."""
    if not checks:
        return ""
    bars = sorted(
        (
            (
                f"{c.relative:+.3%} {_short_model(c.model)}, TP {c.tp}, {c.kind}",
                abs(c.relative) * 100,
            )
            for c in checks
        ),
        key=lambda b: b[1],
    )
    title = "SGLang's pool: predicted against logged, per check"
    svg = bar_chart_svg(
        bars,
        title=title,
        value_format=lambda v: f"{v:.3f}%",
        unit_label="absolute error, % of the logged tokens (the label gives its sign: + "
        "predicted above logged)",
    )
    return _figure(svg, title)


def pool_markdown(checks: list[PoolCheck]) -> str:
    """SGLang's logged KV pool beside tokens x the predicted bytes per token."""
    held = sum(1 for c in checks if c.within)
    out = [
        "The pool line is also checked on its own, for every launch that prints it: "
        "the K and V sizes it logs (GiB, two decimals) against the logged number of tokens "
        "times the bytes per token the serve calculator counts for one rank "
        f"(`calculators/serving/sglang_pool.py`). **{held} of {len(checks)}** within the "
        "log's rounding (0.005 GiB).\n",
        "| record | model (config used) | TP | tokens | bytes per token, K + V | K, V logged | "
        "predicted, each | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| [{_cell(c.id)}]({c.source}) | {_cell(c.model)} (`{_cell(c.config)}`: "
        f"{_cell(c.config_note)}) | {c.tp} | {c.tokens:,} | {c.bytes_per_token:,} | "
        f"{c.logged_k_gib:.2f}, {c.logged_v_gib:.2f} GiB | {c.predicted_gib:.4f} GiB | "
        f"{c.error_gib:+.4f} GiB {'✓' if c.within else '✗'} |"
        for c in checks
    ]
    return "\n".join(out)


def findings_markdown() -> str:
    """What the misses say, with the figures read from the calculators' own tables."""
    one_card = NON_TORCH[1]
    low, high = min(one_card.values_gib.values()), max(one_card.values_gib.values())
    _, seqs = vllm_batch_defaults("vllm", "serve", 80 * 2**30, "NVIDIA H100", 8192)
    vocab = 128_256  # Llama 3's vocabulary (presets/llama-3.1-8b.json)
    sampler = seqs * vocab * SAMPLER_BYTES_PER_LOGIT / 2**30
    return "\n".join(
        [
            f"- **Non-torch memory** ranges from {low:.2f} to {high:.2f} GiB on one card "
            "between launches of the same vLLM generation: the largest source of error on a "
            "single card, and no formula gives it. When a launch is tight, keep the largest "
            "value seen as headroom.",
            f"- **The activation peak** is set by the sampler's profiling pass when "
            f"`max_num_seqs` is large: {SAMPLER_BYTES_PER_LOGIT} bytes per sequence and "
            f"vocabulary entry. On a card of 70 GiB or more (not an A100), vLLM 0.9 and later "
            f"profile {seqs:,} sequences by default: with Llama 3's vocabulary that is "
            f"{sampler:.2f} GiB the KV cache does not get. Lower `--max-num-seqs` if you will "
            "never run that many at once.",
            "- **Quantized checkpoints** differ in which modules they leave in 16-bit: one "
            "that keeps more than the embeddings, the head and the routers weighs more than "
            "predicted.",
            "- **Early V1 (0.8)** counted the CUDA context and measured its peak another way: "
            "its launches keep fewer tokens than predicted.",
        ]
    )


def serving_logs_markdown(path: str) -> str:
    """The whole validation section for the records file at `path`."""
    data = load_records(path)
    comparisons = [compare(r, data["folder"]) for r in data["records"]]
    left_out = data.get("left_out", [])
    sglang = data.get("sglang", [])
    collected = len(comparisons) + len(data.get("not_modelled", [])) + len(sglang)
    parts = [
        f"**{collected} launches** collected "
        f"from public GitHub threads and files: **{len(comparisons)} vLLM launches compared** line "
        f"by line, {len(sglang)} SGLang launches (checked below as far as their logs allow), "
        f"{len(data.get('not_modelled', []))} not modelled (listed below with the reason); "
        f"{len(left_out)} more threads read and left out (listed at the end). Logged / "
        "predicted; ✓ within the stated tolerance, ✗ outside it.\n",
        summary_markdown(error_summary(comparisons)),
        "",
    ]
    for line in ("kv_budget", *(x for x in _LINE_NAMES if x != "kv_budget")):
        name = _LINE_NAMES[line]
        title = f"{name[0].upper()}{name[1:]}: predicted against logged, per record"
        svg = _chart(comparisons, line, title)
        if svg:
            parts.append(_figure(svg, title))
    in_sample = sum(1 for c in comparisons if c.in_sample)
    parts += [
        f"For a record marked {IN_SAMPLE} ({in_sample} of {len(comparisons)}), the non-torch "
        "constant its prediction used includes its own log: the error of its non-torch line "
        "is in-sample (zero where it is the only record at its TP size), and so, partly, are "
        "the errors of its KV budget, tokens and concurrency.\n",
        records_markdown(comparisons),
        "",
        quoted_markdown(comparisons),
    ]
    parts += [
        "\n### Known misses\n",
        "Each record outside a tolerance, the line it misses, and why. The tests fail if one "
        "of these comes within its tolerance or misses another line.\n",
        known_misses_markdown(comparisons),
        "\n### What the misses say\n",
        findings_markdown(),
        f"\n### Collected but not compared ({len(data.get('not_modelled', []))})\n",
        "Launches whose model, format or parallelism the predictor does not model; their "
        "lines are in the data file.\n",
        not_modelled_markdown(data.get("not_modelled", [])),
    ]
    if sglang:
        checks_sglang = sglang_checks(path)
        parts += [
            "\n### SGLang: the pool it sizes\n",
            sglang_chart(checks_sglang),
            sglang_markdown(checks_sglang, sglang),
        ]
    checks = pool_checks(path)
    if checks:
        parts += ["\n### SGLang's KV pool, per token\n", pool_markdown(checks)]
    if left_out:
        parts.append("\n### Left out, and why\n")
        parts += [f"- <{x['source']}>: {_cell(x['reason'])}" for x in left_out]
    return "\n".join(parts) + "\n"
