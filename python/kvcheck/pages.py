"""kvcheck's paged cache in the forms attention libraries take. kvcheck hands an op a block table
(row r's blocks, [rows][max_blocks_per_seq] int32) and each row's length; libraries want:

- FlashInfer: `indptr` [rows + 1], `indices` (the blocks of every row, back to back) and
  `last_page_len` [rows] (tokens in each row's last block; a row of length 0 has no block);
- vLLM's paged kernels: the block table itself with the row lengths (`block_table`, `seq_lens`),
  which kvcheck already gives;
- FlexAttention over the whole pool as one sequence: for each row, where each pool block sits in
  the row (`physical_to_logical`), from which a mask_mod finds a token's position in its row.

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


def physical_to_logical(block_table, seq_lens, block_size, num_blocks):
    """[rows][num_blocks]: the index in row r's block table of pool block b, or -1 when b holds
    none of row r's first seq_lens[r] tokens. Token t of the pool is then at position
    where[r, t // block_size] * block_size + t % block_size of row r (if that index is >= 0)."""
    xp = _xp(block_table)
    rows, width = block_table.shape
    if xp.__name__ == "torch":
        dev = block_table.device
        lens = xp.as_tensor(seq_lens, dtype=xp.int64, device=dev)[:rows]
        cols = xp.arange(width, device=dev)
        where = xp.full((rows, num_blocks), -1, dtype=xp.int64, device=dev)
        r = xp.arange(rows, device=dev)[:, None].expand(rows, width)
        c = cols[None, :].expand(rows, width)
        ids = block_table.long()
    else:
        lens = xp.asarray(seq_lens, dtype=xp.int64)[:rows]
        cols = xp.arange(width)
        where = xp.full((rows, num_blocks), -1, dtype=xp.int64)
        r, c = xp.broadcast_to(xp.arange(rows)[:, None], (rows, width)), \
            xp.broadcast_to(cols[None, :], (rows, width))
        ids = block_table.astype(xp.int64)
    mine = c < ((lens + block_size - 1) // block_size)[:, None]
    where[r[mine], ids[mine]] = c[mine]
    return where
