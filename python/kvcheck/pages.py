"""kvcheck's paged cache in the forms attention libraries take. kvcheck hands an op a block table
(row r's blocks, [rows][max_blocks_per_seq] int32) and each row's length; libraries want:

- FlashInfer: `indptr` [rows + 1], `indices` (the blocks of every row, back to back) and
  `last_page_len` [rows] (tokens in each row's last block; a row of length 0 has no block);
- vLLM's paged kernels and FlexAttention's page tables: the block table itself, with the row
  lengths (`block_table`, `seq_lens`), which kvcheck already gives.

Works on NumPy arrays and torch tensors alike (the result is of the same kind, on the same
device); lengths may be an array or a list.
"""
import types


def _xp(a):
    """The array module of `a`: torch for a tensor, NumPy otherwise."""
    if type(a).__module__.startswith("torch"):
        import torch
        return torch
    import numpy
    return numpy


def flashinfer_pages(block_table, seq_lens, block_size, rows=None):
    """FlashInfer's CSR page lists of the first `rows` rows (all by default)."""
    xp = _xp(block_table)
    rows = block_table.shape[0] if rows is None else rows
    if xp.__name__ == "torch":
        lens = xp.as_tensor(seq_lens, dtype=xp.int32, device=block_table.device)[:rows]
        counts = (lens + block_size - 1) // block_size
        indptr = xp.zeros(rows + 1, dtype=xp.int32, device=block_table.device)
        indptr[1:] = xp.cumsum(counts, 0)
        width = xp.arange(block_table.shape[1], device=block_table.device)
        indices = block_table[:rows][width[None, :] < counts[:, None]].to(xp.int32)
    else:
        lens = xp.asarray(seq_lens, dtype=xp.int32)[:rows]
        counts = (lens + block_size - 1) // block_size
        indptr = xp.zeros(rows + 1, dtype=xp.int32)
        indptr[1:] = xp.cumsum(counts)
        width = xp.arange(block_table.shape[1])
        indices = block_table[:rows][width[None, :] < counts[:, None]].astype(xp.int32)
    last = lens - (counts - 1) * block_size
    last = last * (counts > 0)  # an empty row has no last page
    return types.SimpleNamespace(indptr=indptr, indices=indices, last_page_len=last)
