"""A picture of tinylm's blocks, drawn as SVG from the model's own configuration.

Lesson 0 shows it so that later lessons can say "the first attention layer" and point at
a box. The picture is plain SVG text, shown as HTML in the notebook's output, so the
built page displays it without JavaScript. Every line and letter is drawn in
`currentColor`, the colour of the text around it, so it stays readable when the site
switches to its dark scheme.
"""

from __future__ import annotations

from html import escape

WIDTH = 560
STREAM_X = 130  # the residual stream: one vertical line every block reads and adds to
SIDE_X, SIDE_W = 230, 300  # the boxes that branch off the stream
BOX_H = 44
FONT = 'font-family="sans-serif" font-size="13" fill="currentColor"'


def _box(x: float, y: float, w: float, lines: list[str], dashed: bool = False) -> str:
    """A rectangle with one or two centred lines of text."""
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    parts = [
        f'<rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" rx="6" fill="none"'
        f' stroke="currentColor"{dash}/>'
    ]
    first = y + BOX_H / 2 + 4 - 8 * (len(lines) - 1)
    for i, line in enumerate(lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        parts.append(
            f'<text x="{x + w / 2}" y="{first + 16 * i}" text-anchor="middle" {FONT}{weight}>'
            f"{escape(line)}</text>"
        )
    return "".join(parts)


def _arrow(points: list[tuple[float, float]]) -> str:
    """A line through `points`, with an arrowhead at the last one."""
    d = " ".join(f"{'M' if i == 0 else 'L'}{x},{y}" for i, (x, y) in enumerate(points))
    return f'<path d="{d}" fill="none" stroke="currentColor" marker-end="url(#tinylm-arrow)"/>'


def _plus(x: float, y: float) -> str:
    """A circled plus: the two arrows that meet here are added together."""
    return (
        f'<circle cx="{x}" cy="{y}" r="9" fill="none" stroke="currentColor"/>'
        f'<path d="M{x - 5},{y} L{x + 5},{y} M{x},{y - 5} L{x},{y + 5}" stroke="currentColor"/>'
    )


def _stream(y0: float, y1: float) -> str:
    """A piece of the residual stream, drawn thick, from y0 down to y1."""
    return f'<path d="M{STREAM_X},{y0} L{STREAM_X},{y1}" stroke="currentColor" stroke-width="3"/>'


def _branch(y: float, lines: list[str]) -> tuple[list[str], float]:
    """One sublayer: leave the stream, go through a box, add back into the stream.
    Returns the drawing and the y where the stream continues."""
    centre = SIDE_X + SIDE_W / 2
    out = [
        _arrow([(STREAM_X, y), (centre, y), (centre, y + 16)]),
        _box(SIDE_X, y + 16, SIDE_W, lines),
        _arrow([(centre, y + 16 + BOX_H), (centre, y + 76), (STREAM_X + 11, y + 76)]),
        _plus(STREAM_X, y + 76),
        _stream(y, y + 67),
    ]
    return out, y + 85


def tinylm_svg(n_layers: int, d_model: int, vocab_size: int, context: int) -> str:
    """tinylm from input ids to logits: the two embeddings, `n_layers` blocks (each an
    attention and an MLP that read the residual stream and add their result back), the
    final LayerNorm and the output head. Labels give the attribute names in tinylm.py
    (`model.tok`, `model.blocks[0].qkv`...) and the width of the vectors."""
    parts: list[str] = []
    y = 10
    parts.append(f'<text x="30" y="{y + 12}" {FONT}>token ids: one integer per character</text>')
    y += 22
    parts.append(_arrow([(STREAM_X, y), (STREAM_X, y + 18)]))
    y += 20
    parts.append(_box(30, y, 200, ["token embedding", f"tok: {vocab_size} rows x {d_model}"]))
    parts.append(
        _box(SIDE_X + 30, y, 240, ["position embedding", f"pos: {context} rows x {d_model}"])
    )
    plus_y = y + BOX_H + 26
    parts.append(_arrow([(STREAM_X, y + BOX_H), (STREAM_X, plus_y - 11)]))
    parts.append(
        _arrow([(SIDE_X + 150, y + BOX_H), (SIDE_X + 150, plus_y), (STREAM_X + 11, plus_y)])
    )
    parts.append(_plus(STREAM_X, plus_y))
    y = plus_y + 9
    parts.append(
        f'<text x="{STREAM_X - 12}" y="{y + 40}" text-anchor="end" {FONT}>residual</text>'
        f'<text x="{STREAM_X - 12}" y="{y + 56}" text-anchor="end" {FONT}>stream:</text>'
        f'<text x="{STREAM_X - 12}" y="{y + 72}" text-anchor="end" {FONT}>{d_model} numbers</text>'
        f'<text x="{STREAM_X - 12}" y="{y + 88}" text-anchor="end" {FONT}>per position</text>'
    )
    for i in range(n_layers):
        top = y + 6
        parts.append(_stream(y, y + 22))
        sub, y = _branch(y + 22, [f"attention: blocks[{i}].qkv, .proj", "after norm1 (LayerNorm)"])
        parts += sub
        sub, y = _branch(y, [f"MLP: blocks[{i}].up, GELU, .down", "after norm2 (LayerNorm)"])
        parts += sub
        height = y - top + 4
        parts.append(
            f'<rect x="20" y="{top}" width="{WIDTH - 30}" height="{height}" rx="8" fill="none"'
            ' stroke="currentColor" stroke-dasharray="2 4"/>'
            f'<text x="{WIDTH - 16}" y="{top + 16}" text-anchor="end" {FONT}>block {i}</text>'
        )
        parts.append(_stream(y, y + 10))
        y += 10
    parts.append(_arrow([(STREAM_X, y), (STREAM_X, y + 8)]))
    parts.append(_box(30, y + 10, 200, ["final LayerNorm", "norm"]))
    y += 10 + BOX_H
    parts.append(_arrow([(STREAM_X, y), (STREAM_X, y + 18)]))
    parts.append(_box(30, y + 20, 200, ["output head", "head: shares tok's tensor"]))
    y += 20 + BOX_H
    parts.append(_arrow([(STREAM_X, y), (STREAM_X, y + 18)]))
    parts.append(
        f'<text x="30" y="{y + 34}" {FONT}>'
        f"logits: {vocab_size} scores per position, one per character</text>"
    )
    height = y + 46
    marker = (
        '<defs><marker id="tinylm-arrow" viewBox="0 0 10 10" refX="9" refY="5"'
        ' markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>'
    )
    title = f"tinylm: embeddings, {n_layers} transformer blocks, final norm and output head"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}"'
        f' width="{WIDTH}" height="{height}" role="img" aria-label="{escape(title)}"'
        f' style="max-width: 100%; height: auto">'
        f"<title>{escape(title)}</title>{marker}{''.join(parts)}</svg>"
    )
