"""PyTorch FlexAttention over kvcheck's paged cache, as paged_decode and paged_prefill: a real paged
kernel that PyTorch generates with Triton from a block mask.

    kvcheck run scenarios/gpu/llama-gqa-bf16.json --device cuda --backend python:flex_paged

The cache's K (and V) pages of all blocks are one long sequence of num_blocks x block_size tokens
to FlexAttention ([1, kv heads, tokens, head_dim], a view, no copy); the block table becomes a
mask: token t of the pool is visible to row r when its block is one of row r's and its position in
the row is below the row's length (prefill: at most the context plus the query's own position).
The mask is made per call from the block table (create_block_mask), and the kernel is compiled per
row count, padded to a power of two so that a run compiles a handful of kernels, not one per step.

bf16 caches and io, the kv_separate layout (K pages contiguous), head dims 64 / 128 / 256, any GQA
ratio; no MLA (its 576-wide rows are no FlexAttention head dim). Compilation and the mask allocate:
no CUDA graphs.
"""
import kvcheck
from kvcheck.pages import physical_to_logical

KV_BLOCK = 128  # FlexAttention's KV tile


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


class Flex:
    def __init__(self, torch):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        self.torch = torch
        self.create_block_mask = create_block_mask
        self.flex = torch.compile(flex_attention, dynamic=False)

    def pool(self, c):
        """K and V of every block as [1, kv heads, tokens, head_dim] bf16 views."""
        t = self.torch
        n, bs, h, d = c.k.shape
        k = c.k.view(t.bfloat16).reshape(1, n * bs, h, d).transpose(1, 2)
        v = c.v.view(t.bfloat16).reshape(1, n * bs, h, d).transpose(1, 2)
        return k, v

    def attend(self, q, c, table, lens, limit, scale):
        """q [B, Hq, Q, D] over row b's cached tokens at logical positions < limit(b, q_idx)."""
        t = self.torch
        k, v = self.pool(c)
        bs = c.block_size
        where = physical_to_logical(table, lens, bs, c.k.shape[0])

        def mask_mod(b, h, q_idx, kv_idx):
            block = where[b, kv_idx // bs]
            pos = block * bs + kv_idx % bs
            return (block >= 0) & (pos < limit(b, q_idx))

        bm = self.create_block_mask(mask_mod, q.shape[0], None, q.shape[2], k.shape[2],
                                    device=q.device, BLOCK_SIZE=(KV_BLOCK, KV_BLOCK))
        o, lse = self.flex(q, k, v, block_mask=bm, scale=scale, enable_gqa=True,
                           return_lse=True)
        return o, lse


def _decode(f):
    t = f.torch

    def paged_decode(a):
        rows = a.num_rows
        if rows == 0:
            return
        pad = _next_pow2(rows)
        q = t.zeros((pad, a.num_q_heads, 1, a.cache.head_dim), dtype=t.bfloat16,
                    device=a.q.device)
        q[:rows, :, 0] = a.q.view(t.bfloat16)[:rows]
        lens = t.zeros(pad, dtype=t.int32, device=a.q.device)
        lens[:rows] = a.seq_lens[:rows]
        table = t.zeros((pad, a.block_table.shape[1]), dtype=t.int32, device=a.q.device)
        table[:rows] = a.block_table[:rows]
        o, lse = f.attend(q, a.cache, table, lens, lambda b, qi: lens[b], a.scale)
        real = a.seq_lens[:rows] > 0  # padded rows (length 0) stay untouched
        out = a.out.view(t.bfloat16)
        out[:rows][real] = o[:rows, :, 0][real].to(t.bfloat16)
        if a.lse is not None:
            a.lse[:rows][real] = lse[:rows, :, 0][real].float()
    return paged_decode


def _prefill(f):
    t = f.torch

    def paged_prefill(a):
        seqs = a.num_seqs
        starts, ctx = a.q_starts_host, a.ctx_lens_host
        qlen = [starts[s + 1] - starts[s] for s in range(seqs)]
        if seqs == 0 or max(qlen) == 0:
            return
        b, qpad = _next_pow2(seqs), _next_pow2(max(qlen))
        dev = a.q.device
        q = t.zeros((b, a.num_q_heads, qpad, a.cache.head_dim), dtype=t.bfloat16, device=dev)
        qa = a.q.view(t.bfloat16)
        for s in range(seqs):
            q[s, :, :qlen[s]] = qa[starts[s]:starts[s + 1]].transpose(0, 1)
        ctx_t = t.zeros(b, dtype=t.int32, device=dev)
        ctx_t[:seqs] = a.ctx_lens[:seqs]
        lens = ctx_t.clone()
        lens[:seqs] += t.tensor(qlen, dtype=t.int32, device=dev)
        table = t.zeros((b, a.block_table.shape[1]), dtype=t.int32, device=dev)
        table[:seqs] = a.block_table[:seqs]
        # Query j of sequence b sees its context and its own tokens up to j.
        o, lse = f.attend(q, a.cache, table, lens, lambda bi, qi: ctx_t[bi] + qi + 1, a.scale)
        out = a.out.view(t.bfloat16)
        for s in range(seqs):
            out[starts[s]:starts[s + 1]] = o[s, :, :qlen[s]].transpose(0, 1).to(t.bfloat16)
            if a.lse is not None:
                a.lse[starts[s]:starts[s + 1]] = lse[s, :, :qlen[s]].transpose(0, 1).float()
    return paged_prefill


def kvcheck_backend(host):
    if host.device != "cuda":
        raise kvcheck.Unsupported("flex_paged runs PyTorch's FlexAttention on CUDA: --device cuda")
    ops = ("paged_decode", "paged_prefill")
    for item in filter(None, host.options.split(",")):
        key, _, value = item.partition("=")
        if key != "ops" or not set(value.split("+")) <= {"paged_decode", "paged_prefill"}:
            raise kvcheck.Unsupported(
                f"unknown option {item!r} (known: ops=paged_decode+paged_prefill)")
        ops = tuple(value.split("+"))
    import torch
    f = Flex(torch)
    table = {"paged_decode": _decode(f), "paged_prefill": _prefill(f)}
    return kvcheck.Backend(
        name="flex-paged", version=f"torch {torch.__version__}",
        caps=kvcheck.Caps(cache_dtypes=["bf16"], layouts=["kv_separate"], io_dtype="bf16",
                          head_dims=[64, 128, 256], lse_base="natural", graph_support="none"),
        ops={op: table[op] for op in ops})
