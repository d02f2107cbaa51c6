"""Check 7: the data loader's order. A `DistributedSampler` (one rank's share, reshuffled
each epoch by `set_epoch`) under a resumable wrapper that skips what an interrupted run
already consumed, feeding a plain `DataLoader`: the pattern to copy into a training
loop. The loop saves (epoch, batches consumed) with its checkpoint; a resumed run calls
`begin_epoch` for that epoch and starts after those batches.

Without `set_epoch` every epoch repeats the first epoch's order (PyTorch's
DistributedSampler documentation: "Calling the set_epoch() method at the beginning of
each epoch before creating the DataLoader iterator is necessary to make shuffling work
properly across multiple epochs. Otherwise, the same ordering will be always used.").

Test hook (not a flag): `begin_epoch`; tests replace it with one that forgets
`set_epoch` to plant that fault.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from probes.preflight.outcome import CheckOutcome

ROWS = 64  # rows of the check's dataset: enough for several batches per rank
ROW_TOKENS = 8


class ResumableSampler(Sampler[int]):
    """One rank's indices for one epoch, starting after `skip` of them."""

    def __init__(self, inner: DistributedSampler) -> None:
        self.inner = inner
        self.skip = 0

    def __iter__(self) -> Iterator[int]:
        order = list(self.inner)
        return iter(order[self.skip :])

    def __len__(self) -> int:
        return len(self.inner) - self.skip


def begin_epoch(sampler: ResumableSampler, epoch: int, consumed_batches: int, batch: int) -> None:
    """Set the epoch (the shuffle's seed is seed + epoch) and skip what was consumed."""
    sampler.inner.set_epoch(epoch)
    sampler.skip = consumed_batches * batch


def make_loader(
    rows: torch.Tensor, batch: int, seed: int, rank: int, world: int
) -> tuple[DataLoader, ResumableSampler]:
    inner = DistributedSampler(
        rows, num_replicas=world, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    sampler = ResumableSampler(inner)
    return DataLoader(rows, batch_size=batch, sampler=sampler, drop_last=True), sampler


def epoch_batches(
    rows: torch.Tensor, batch: int, seed: int, rank: int, world: int, epoch: int, skip: int = 0
) -> list[torch.Tensor]:
    """The batches a fresh loader yields for `epoch`, after `skip` consumed batches."""
    loader, sampler = make_loader(rows, batch, seed, rank, world)
    begin_epoch(sampler, epoch, skip, batch)
    return list(loader)


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def data_order(seed: int, rank: int, world: int, batch: int) -> CheckOutcome:
    """Check 7: same seed, same batches; another epoch, another order; a loader rebuilt
    from (epoch, consumed batches) continues exactly where the first stopped; the ranks'
    shares of an epoch do not overlap."""
    t0 = time.perf_counter()
    out = CheckOutcome(number=7, id="data-order", title="Data order")
    # each row holds its own index: a batch shows which rows it carries
    rows = torch.arange(ROWS).repeat_interleave(ROW_TOKENS).view(ROWS, ROW_TOKENS)
    per_rank = ROWS // world
    batch = max(1, min(batch, per_rank // 4))  # at least 4 batches per epoch to resume in
    first = epoch_batches(rows, batch, seed, rank, world, 0)
    again = epoch_batches(rows, batch, seed, rank, world, 0)
    second = epoch_batches(rows, batch, seed, rank, world, 1)
    half = len(second) // 2
    resumed = epoch_batches(rows, batch, seed, rank, world, 1, skip=half)
    shares = [
        torch.cat(epoch_batches(rows, batch, seed, r, world, 1))[:, 0].tolist()
        for r in range(world)
    ]
    flat = [i for share in shares for i in share]
    results = {
        "same_seed_same_batches": _same(first, again),
        "new_epoch_new_order": not _same(first, second),
        "resumes_at_saved_position": _same(second[half:], resumed),
        "ranks_disjoint": len(flat) == len(set(flat)),
    }
    out.measured = {k: int(v) for k, v in results.items()}
    out.threshold = dict.fromkeys(results, 1)
    out.units = dict.fromkeys(results, "boolean")
    out.details = {
        "rows": ROWS,
        "batch": batch,
        "world_size": world,
        "rank": rank,
        "batches_per_epoch": len(first),
        "resumed_after_batches": half,
        "first_epoch_rows": torch.cat(first)[:, 0].tolist(),
        "second_epoch_rows": torch.cat(second)[:, 0].tolist(),
    }
    broken = [k for k, v in results.items() if not v]
    out.offenders = {"broken": broken} if broken else {}
    out.status = "fail" if broken else "pass"
    out.summary = ", ".join(
        f"{k.replace('_', ' ')}: {'yes' if v else 'NO'}" for k, v in results.items()
    )
    looks = {
        "same_seed_same_batches": "an unseeded shuffle or worker RNG (seed the sampler and "
        "the DataLoader's generator)",
        "new_epoch_new_order": "set_epoch(epoch) is not called before each epoch's iterator",
        "resumes_at_saved_position": "the checkpoint does not store (epoch, batches consumed) "
        "or the loader does not skip them",
        "ranks_disjoint": "num_replicas/rank not passed to the sampler",
    }
    out.look_at = "; ".join(looks[k] for k in broken) or None
    out.seconds = time.perf_counter() - t0
    return out


__all__ = ["ResumableSampler", "begin_epoch", "data_order", "make_loader"]
