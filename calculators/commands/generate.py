"""generate: text from the lessons' small model, one token at a time, through a library's
sampling stages (repetition penalty, temperature, top-k, top-p, min-p) with a seeded draw
(`calculators.generation.decoding`; the model: `calculators.generation.tinylm_forward`)."""

from __future__ import annotations

from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.commands.sampling import knob_inputs
from calculators.generation.decoding import MAX_SEED, Generation, generate_tokens
from calculators.generation.sampling import (
    ORDER_STAGES,
    PENALTY_RANGE,
    STAGE_LABELS,
    SamplingSettings,
)
from calculators.generation.tinylm_forward import MAX_CONTEXT, MAX_VOCAB, TinyLM, load_tinylm
from calculators.render import table
from calculators.web.render import bar_chart_svg, html_table, summary

# Candidates the first step's charts show: the model's most probable ones, the same set
# in every chart so that a bar can be followed from stage to stage.
SHOWN = 12
# Characters of the text so far that a step's row shows.
TAIL = 32

_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}

# Significant digits the JSON keeps of a probability or an entropy. The model's arithmetic
# runs through the platform's math library (exp, erf), which may round the last bit
# differently in the browser (Pyodide) and in CPython; six digits are all the page shows,
# and at six digits the two agree unless a value sits within a few units in the last
# place of a rounding boundary.
DIGITS = 6


def _rounded(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def character(c: str) -> str:
    """A character as the tables show it: a space as ␣, a line break as ↵."""
    return _VISIBLE.get(c, c)


def _visible_text(text: str) -> str:
    return text.replace("\n", "↵")


def result_json(
    model: TinyLM, prompt: str, g: Generation, settings: SamplingSettings, seed: int
) -> dict[str, Any]:
    vocab = model.vocab
    generated = "".join(vocab[s.token] for s in g.steps)
    first = g.first
    model_p = first.stages[0].probabilities
    shown = sorted(range(len(vocab)), key=lambda i: (-_rounded(model_p[i]), i))[:SHOWN]
    return {
        "order": settings.order,
        "order_stages": list(ORDER_STAGES[settings.order]),
        "settings": {
            "temperature": settings.temperature,
            "top_k": settings.top_k,
            "top_p": settings.top_p,
            "min_p": settings.min_p,
            "repetition_penalty": settings.repetition_penalty,
            "seed": seed,
            "tokens": len(g.steps),
        },
        "model": {
            "vocab_size": len(vocab),
            "context": model.context,
            "d_model": model.d_model,
            "n_heads": model.n_heads,
            "n_layers": len(model.blocks),
            # the training record's single values; its loss curve stays in the file
            "training": {k: v for k, v in model.training.items() if not isinstance(v, list | dict)},
        },
        "vocab": vocab,
        "prompt": prompt,
        "generated": generated,
        "text": prompt + generated,
        "steps": [
            {
                "step": n,
                "token": s.token,
                "character": vocab[s.token],
                "u": s.u,
                "probability": _rounded(s.probability),
                "model_probability": _rounded(s.model_probability),
                "kept": s.kept,
                "entropy_bits": _rounded(s.entropy_bits),
            }
            for n, s in enumerate(g.steps, start=1)
        ],
        "first_step": {
            "shown": shown,
            "stages": [
                {
                    "id": s.id,
                    "label": s.label,
                    "enabled": s.enabled,
                    "kept": s.kept,
                    "entropy_bits": _rounded(s.entropy_bits),
                    "probabilities": [_rounded(p) for p in s.probabilities],
                }
                for s in first.stages
            ],
        },
    }


def _pct(p: float) -> str:
    return "0" if p == 0 else f"{100 * p:.3g}%"


def _chain(r: dict[str, Any]) -> str:
    return " -> ".join(STAGE_LABELS[s] for s in r["order_stages"])


def _summary_line(r: dict[str, Any]) -> str:
    s = r["settings"]
    steps = r["steps"]
    surprising = sum(1 for x in steps if x["kept"] > 1 and x["probability"] < 0.5)
    return (
        f"{r['order']} order ({_chain(r)}), seed {s['seed']}: "
        f"“{_visible_text(r['prompt'])}” continues as “{_visible_text(r['generated'])}”. "
        f"{len(steps)} characters drawn, {surprising} of them with a probability under 50% "
        f"in the distribution they were drawn from."
    )


_STEP_HEAD = ["step", "character", "p drawn from", "p model", "candidates", "text so far"]


def _step_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    text = r["prompt"]
    for s in r["steps"]:
        text += s["character"]
        tail = text[-TAIL:]
        rows.append(
            [
                str(s["step"]),
                character(s["character"]),
                _pct(s["probability"]),
                _pct(s["model_probability"]),
                f"{s['kept']:,}",
                ("…" if len(text) > TAIL else "") + _visible_text(tail),
            ]
        )
    return rows


_STAGE_HEAD = ["stage", "applied", "candidates kept", "entropy (bits)", "most probable"]


def _stage_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for s in r["first_step"]["stages"]:
        p = s["probabilities"]
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        rows.append(
            [
                s["label"],
                "" if s["id"] == "input" else ("yes" if s["enabled"] else "no"),
                f"{s['kept']:,}",
                f"{s['entropy_bits']:.3f}",
                f"{character(r['vocab'][best])}: {_pct(p[best])}",
            ]
        )
    return rows


def run(args: Args) -> tuple[dict[str, Any], str]:
    model = load_tinylm(args.weights)
    prompt = args.prompt or ""
    ids = model.encode(prompt)
    settings = SamplingSettings(
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        order=args.order,
    )
    g = generate_tokens(model, ids, args.tokens, settings, args.seed)
    data = result_json(model, prompt, g, settings, args.seed)
    text = [
        _summary_line(data),
        "",
        "The first step's distribution after each stage:",
        table(_STAGE_HEAD, _stage_rows(data)),
        "",
        "The sentence, token by token:",
        table(_STEP_HEAD, _step_rows(data)),
    ]
    return data, "\n".join(text)


def _stage_chart(r: dict[str, Any], stage: dict[str, Any]) -> str:
    p = stage["probabilities"]
    bars = [(character(r["vocab"][i]), p[i]) for i in r["first_step"]["shown"]]
    where = "the model's own distribution" if stage["id"] == "input" else f"after {stage['label']}"
    return bar_chart_svg(
        bars,
        title=f"Step 1, {where}: {stage['kept']:,} candidates, "
        f"entropy {stage['entropy_bits']:.2f} bits",
        value_format=_pct,
        unit_label=f"probability of the next character; the model's {SHOWN} most probable",
    )


def html(r: dict[str, Any]) -> str:
    shown = [s for s in r["first_step"]["stages"] if s["enabled"]]
    return "".join(
        [
            summary(_summary_line(r)),
            html_table(
                _STEP_HEAD,
                _step_rows(r),
                caption="The sentence, token by token: each character drawn from the "
                "distribution left after the stages",
            ),
            *(_stage_chart(r, s) for s in shown),
            html_table(
                _STAGE_HEAD,
                _stage_rows(r),
                caption=f"The first step's stages in order: {_chain(r)}",
            ),
        ]
    )


CALCULATOR = Calculator(
    name="generate",
    title="Next-token generation",
    summary="Text from the lessons' small model, one character at a time: the candidate "
    "distribution before and after each sampling stage, in transformers' or llama.cpp's "
    "order, and the sentence a seed draws.",
    help="generate text from the lessons' small model with sampling settings and a seed",
    inputs=(
        Input(
            name="weights",
            label="Model weights",
            kind="file",
            example="learn/tinylm-weights.json",
            required=True,
            metavar="FILE",
            help="The model's weights as docs/learn/export_tinylm.py writes them; the page "
            "starts with the lessons' trained model.",
        ),
        Input(
            name="prompt",
            label="Prompt",
            kind="text",
            example="The GPU memory",
            required=True,
            metavar="TEXT",
            help="The text to continue; every character must be one the model knows "
            "(plain ASCII letters, digits and punctuation). Leading and trailing spaces "
            "are dropped.",
        ),
        *knob_inputs(
            what="characters",
            top_k_max=MAX_VOCAB,
            temperature_example=0.8,
            penalty=Input(
                name="repetition_penalty",
                label="Repetition penalty",
                kind="float",
                default=1.0,
                minimum=0,
                maximum=PENALTY_RANGE[1],
                help="The logit of every character already in the text is divided by it "
                "(multiplied if negative); 1 is off.",
            ),
        ),
        Input(
            name="seed",
            label="Seed",
            kind="int",
            default=0,
            minimum=0,
            maximum=MAX_SEED,
            help="Seeds the random numbers of the draws: the same seed, prompt and settings "
            "give the same text.",
        ),
        Input(
            name="tokens",
            label="Characters to generate",
            kind="int",
            default=40,
            unit="tokens",
            minimum=1,
            maximum=MAX_CONTEXT - 1,
            help="How many characters to draw; with the prompt they must fit the model's "
            "context (the characters it sees at once).",
        ),
    ),
    run=run,
    html=html,
    order=19,
)
