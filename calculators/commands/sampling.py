"""sampling: the distribution a decoding library samples the next token from, after each of
its stages (repetition penalty, temperature, top-k, top-p, min-p) in transformers' or
llama.cpp's order (`calculators.generation.sampling`)."""

from __future__ import annotations

from math import inf
from typing import Any

from calculators.commands.declaration import Args, Calculator, Input
from calculators.errors import InputError, shown
from calculators.generation.sampling import (
    LLAMA_CPP,
    LLAMA_CPP_PENALTY_LAST_N,
    ORDER_STAGES,
    ORDERS,
    PENALTY_RANGE,
    STAGE_LABELS,
    TEMPERATURE_RANGE,
    TRANSFORMERS,
    NextTokenLogits,
    SamplingResult,
    SamplingSettings,
    sampling_distribution,
)
from calculators.limits import MAX_PREVIOUS_TOKENS, MAX_SAMPLING_LOGITS
from calculators.parsing import parse_int, parse_numbers
from calculators.render import table
from calculators.web.render import bar_chart_svg, html_table, notes_html, summary

# Tokens the text, the charts and the tables show (the JSON holds every token).
SHOWN = 20

# The page's example: an illustrative next-token distribution after "I drank a cup of".
EXAMPLE_LOGITS = "6.1,5.8,4.9,4.2,3.6,3.1,2.2,1.0"
EXAMPLE_LABELS = "tea,coffee,water,hot,milk,cold,green,soup"


def _items(field: str, text: str, most: int) -> list[str]:
    """The comma-separated items of `text`, refused before splitting when there are more
    commas than `most` items could need (a pasted text is not split without bound)."""
    if text.count(",") > most:
        raise InputError(field, f"{field} must be at most {most:,} items, got more")
    return text.split(",")


def parse_logits(text: str) -> tuple[float, ...]:
    """Comma-separated logits, one per token."""
    _items("logits", text, MAX_SAMPLING_LOGITS)
    return parse_numbers("logits", text)


def parse_previous(text: str | None) -> tuple[int, ...]:
    """Comma-separated token ids (empty: none)."""
    if text is None:
        return ()
    ids = []
    for item in _items("previous", text, MAX_PREVIOUS_TOKENS):
        if item.strip():
            try:
                ids.append(parse_int("previous", item))
            except InputError:
                raise InputError(
                    "previous",
                    f"previous must be comma-separated token ids, got {shown(item.strip())}",
                ) from None
    return tuple(ids)


def parse_labels(text: str | None, count: int) -> list[str]:
    """One display name per token, comma-separated (a name cannot hold a comma); without
    them, each token is named by its id."""
    if text is None or not text.strip():
        return [str(i) for i in range(count)]
    labels = [item.strip() for item in _items("labels", text, MAX_SAMPLING_LOGITS)]
    if len(labels) != count:
        raise InputError(
            "labels",
            f"labels must name every token, one per logit ({count:,}), got {len(labels):,}",
        )
    return labels


def _logits_json(logits: tuple[float, ...]) -> list[float | None]:
    """JSON has no -inf: a filtered token's logit is null."""
    return [None if v == -inf else v for v in logits]


def _ranked_tokens(r: SamplingResult) -> list[int]:
    """Token ids by final probability, then by the model's probability (so the filtered
    tokens the model liked most follow the kept ones), then by id."""
    final, first = r.probabilities, r.stages[0].probabilities
    return sorted(range(len(final)), key=lambda i: (-final[i], -first[i], i))


def result_json(
    r: SamplingResult, settings: SamplingSettings, previous: tuple[int, ...], labels: list[str]
) -> dict[str, Any]:
    first = r.stages[0]
    final = r.stages[-1]
    notes = []
    if settings.order == LLAMA_CPP and settings.repetition_penalty != 1.0:
        window = settings.penalty_last_n
        if len(previous) > window:
            notes.append(
                f"llama.cpp penalises the last {window:,} tokens only (penalty_last_n): "
                f"{len(previous) - window:,} earlier previous ids are not penalised."
            )
    top_k = r.stage("top_k")
    if settings.order == TRANSFORMERS and top_k.enabled and top_k.kept > settings.top_k:
        notes.append(
            f"top-k kept {top_k.kept:,} tokens for k = {settings.top_k:,}: transformers keeps "
            "every token tied with the k-th largest logit."
        )
    return {
        "order": r.order,
        "order_stages": list(ORDER_STAGES[r.order]),
        "settings": {
            "temperature": settings.temperature,
            "top_k": settings.top_k,
            "top_p": settings.top_p,
            "min_p": settings.min_p,
            "repetition_penalty": settings.repetition_penalty,
            "penalty_last_n": settings.penalty_last_n,
        },
        "tokens": len(final.logits),
        "labels": labels,
        "previous": list(previous),
        "penalized": list(r.penalized),
        "stages": [
            {
                "id": s.id,
                "label": s.label,
                "enabled": s.enabled,
                "setting": None if s.id == "input" else getattr(settings, s.id),
                "kept": s.kept,
                "entropy_bits": s.entropy_bits,
                "logits": _logits_json(s.logits),
                "probabilities": list(s.probabilities),
            }
            for s in r.stages
        ],
        "probabilities": list(final.probabilities),
        "kept": final.kept,
        "entropy_bits": final.entropy_bits,
        "top": [
            {
                "token": i,
                "label": labels[i],
                "probability": final.probabilities[i],
                "input_probability": first.probabilities[i],
                "logit": None if final.logits[i] == -inf else final.logits[i],
            }
            for i in _ranked_tokens(r)[:SHOWN]
        ],
        "notes": notes,
    }


def _pct(p: float) -> str:
    """A probability as a percentage with three significant digits; 0 for a filtered
    token (or one whose probability underflowed)."""
    return "0" if p == 0 else f"{100 * p:.3g}%"


def _setting(value: Any) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _token(r: dict[str, Any], i: int) -> str:
    label = r["labels"][i]
    return label if label == str(i) else f"{label} (#{i})"


def _chain(r: dict[str, Any]) -> str:
    return " -> ".join(STAGE_LABELS[s] for s in r["order_stages"])


def _shown_stages(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's distribution and every stage that is on."""
    return [s for s in r["stages"] if s["enabled"]]


def _stage_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for s in r["stages"]:
        p = s["probabilities"]
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        rows.append(
            [
                s["label"],
                "" if s["id"] == "input" else ("yes" if s["enabled"] else "no"),
                _setting(s["setting"]),
                f"{s['kept']:,}",
                f"{s['entropy_bits']:.3f}",
                f"{_token(r, best)}: {_pct(p[best])}",
            ]
        )
    return rows


_STAGE_HEAD = ["stage", "applied", "setting", "tokens kept", "entropy (bits)", "most probable"]


def _token_head(r: dict[str, Any]) -> list[str]:
    return [
        "token",
        "model logit",
        "p model",
        *(f"p after {s['label']}" for s in _shown_stages(r)[1:]),
    ]


def _token_rows(r: dict[str, Any]) -> list[list[str]]:
    shown = _shown_stages(r)
    rows = []
    for t in r["top"]:
        i = t["token"]
        logit = r["stages"][0]["logits"][i]
        rows.append(
            [
                _token(r, i),
                f"{logit:.4g}",
                _pct(t["input_probability"]),
                *(_pct(s["probabilities"][i]) for s in shown[1:]),
            ]
        )
    return rows


def _summary_line(r: dict[str, Any]) -> str:
    best = r["top"][0]
    return (
        f"{r['order']} order ({_chain(r)}): {r['kept']:,} of {r['tokens']:,} tokens kept, "
        f"entropy {r['entropy_bits']:.3f} bits; most probable {_token(r, best['token'])} at "
        f"{_pct(best['probability'])} (model: {_pct(best['input_probability'])})."
    )


def run(args: Args) -> tuple[dict[str, Any], str]:
    logits = parse_logits(args.logits)
    previous = parse_previous(args.previous)
    inputs = NextTokenLogits(logits=logits, previous=previous)
    labels = parse_labels(args.labels, len(logits))
    settings = SamplingSettings(
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        penalty_last_n=args.penalty_last_n,
        order=args.order,
    )
    data = result_json(sampling_distribution(inputs, settings), settings, previous, labels)
    text = [
        _summary_line(data),
        "",
        table(_STAGE_HEAD, _stage_rows(data)),
        "",
        f"The {len(data['top'])} most probable tokens after the last stage:",
        table(_token_head(data), _token_rows(data)),
        *data["notes"],
    ]
    return data, "\n".join(text)


def html(r: dict[str, Any]) -> str:
    top = r["top"]
    chart = bar_chart_svg(
        [(_token(r, t["token"]), t["probability"]) for t in top],
        title=f"Probability of the next token after every stage ({r['order']} order)",
        value_format=_pct,
        unit_label="probability sampled from; 0: filtered by a stage",
    )
    model = bar_chart_svg(
        [(_token(r, t["token"]), t["input_probability"]) for t in top],
        title="The same tokens' probabilities from the model's logits alone",
        value_format=_pct,
        unit_label="softmax of the logits as given, no setting applied",
    )
    return "".join(
        [
            summary(_summary_line(r)),
            chart,
            html_table(_STAGE_HEAD, _stage_rows(r), caption=f"Stages in order: {_chain(r)}"),
            html_table(
                _token_head(r),
                _token_rows(r),
                caption=f"The {len(top)} most probable tokens, after each stage that is on",
            ),
            model,
            notes_html(r),
        ]
    )


def knob_inputs(
    *, what: str, top_k_max: int, temperature_example: float, penalty: Input
) -> tuple[Input, ...]:
    """The sampling knobs' inputs, shared with `generate`: the library order, temperature,
    top-k, top-p and min-p, each off at its library value, then `penalty` (how the
    repetition penalty reads differs: previous ids here, the text so far there).
    what: the unit the help names (tokens, characters)."""
    return (
        Input(
            name="order",
            label="Library order",
            kind="choice",
            default=TRANSFORMERS,
            choices=ORDERS,
            help="transformers: penalty, temperature, top-k, top-p, min-p. llama.cpp: "
            "penalty, top-k, top-p, min-p, temperature.",
        ),
        Input(
            name="temperature",
            label="Temperature",
            kind="float",
            default=1.0,
            example=temperature_example,
            minimum=0,
            maximum=TEMPERATURE_RANGE[1],
            help="Logits are divided by it; 1 is off. Above 0: for greedy decoding set top-k to 1.",
        ),
        Input(
            name="top_k",
            label="Top-k",
            kind="int",
            default=0,
            unit="tokens",
            minimum=0,
            maximum=top_k_max,
            help=f"Keep the k most probable {what}; 0 is off.",
        ),
        Input(
            name="top_p",
            label="Top-p",
            kind="float",
            default=1.0,
            example=0.9,
            minimum=0,
            maximum=1,
            help=f"Keep the most probable {what} whose probabilities add up to p; 1 is off.",
        ),
        Input(
            name="min_p",
            label="Min-p",
            kind="float",
            default=0.0,
            example=0.05,
            minimum=0,
            maximum=1,
            help=f"Drop {what} less probable than min-p times the most probable one; 0 is off.",
        ),
        penalty,
    )


CALCULATOR = Calculator(
    name="sampling",
    title="Next-token sampling",
    summary="From the logits of one step: the distribution the next token is drawn from after "
    "repetition penalty, temperature, top-k, top-p and min-p, stage by stage, in "
    "transformers' or llama.cpp's order.",
    help="next-token distribution after penalty, temperature, top-k, top-p, min-p",
    inputs=(
        Input(
            name="logits",
            label="Logits",
            kind="text",
            example=EXAMPLE_LOGITS,
            required=True,
            help=f"The model's logits for the next token, comma-separated, one per token "
            f"(token id = position), 1 to {MAX_SAMPLING_LOGITS:,}.",
            metavar="X,X,...",
        ),
        Input(
            name="labels",
            label="Token names",
            kind="text",
            example=EXAMPLE_LABELS,
            optional=True,
            help="For display: one name per token, comma-separated; empty: tokens are named "
            "by their id.",
            metavar="NAME,NAME,...",
        ),
        Input(
            name="previous",
            label="Previous token ids",
            kind="text",
            example="1",
            optional=True,
            help="Ids of the tokens already in the sequence, oldest first: the repetition "
            "penalty applies to them.",
            metavar="ID,ID,...",
        ),
        *knob_inputs(
            what="tokens",
            top_k_max=MAX_SAMPLING_LOGITS,
            temperature_example=0.7,
            penalty=Input(
                name="repetition_penalty",
                label="Repetition penalty",
                kind="float",
                default=1.0,
                example=1.3,
                minimum=0,
                maximum=PENALTY_RANGE[1],
                help="A previous token's positive logit is divided by it, a negative one "
                "multiplied; 1 is off.",
            ),
        ),
        Input(
            name="penalty_last_n",
            label="Penalty window (llama.cpp)",
            kind="int",
            default=LLAMA_CPP_PENALTY_LAST_N,
            unit="tokens",
            minimum=0,
            maximum=MAX_PREVIOUS_TOKENS,
            help="llama.cpp's order only: the penalty reads the last n previous ids "
            "(its default 64); 0 turns it off. transformers reads them all.",
        ),
    ),
    run=run,
    html=html,
    order=18,
)
