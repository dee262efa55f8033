"""A split-KV paged decode in Triton, as kvcheck's paged_decode: the kind of kernel vLLM ships,
written here as the example docs/python-backends.md walks through.

    kvcheck run scenarios/gpu/llama-gqa-bf16.json --device cuda --backend python:triton_decode

Two kernels per call, both launched on kvcheck's stream (the host makes it torch's current one):
 1. _split_kernel, grid (rows, kv heads, splits): one program per row, kv head and split of the
    row's tokens; the q heads sharing the kv head are the rows of one tl.dot (padded to 16),
    tokens come TILE at a time through the block table (any block size), online softmax, and the
    split's partial output and natural-log LSE go to kvcheck's workspace;
 2. _merge_kernel, grid (rows, q heads): the splits combined by their LSE into a.out (and a.lse).
The split count is always the engine's limit (a.max_splits): a fixed grid, nothing read back to
the host; a split with no token writes the empty state. Rows of length 0 (graph padding) are left
untouched.

bf16 io; bf16 or fp8 e4m3 caches (fp8 dequantised with its scale, then bf16 into the dot), head
dims 64, 128, 256, any GQA ratio; no MLA. No CUDA graphs: Triton compiles a kernel on its first
call, which a graph capture cannot contain.
"""
import kvcheck

TILE = 32  # tokens per step of the inner loop


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def split_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, part_o_ptr, part_lse_ptr,
                     sq_r, sq_h, sk_b, sk_e, sk_h, sv_b, sv_e, sv_h, st_r,
                     scale, k_scale, v_scale, block_size, num_splits,
                     GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, D: tl.constexpr,
                     DV: tl.constexpr, NQH: tl.constexpr, FP8: tl.constexpr, T: tl.constexpr):
        row = tl.program_id(0)
        kvh = tl.program_id(1)
        split = tl.program_id(2)
        seq_len = tl.load(lens_ptr + row)
        g = tl.arange(0, GROUP_PAD)
        d = tl.arange(0, D)
        dv = tl.arange(0, DV)
        heads = kvh * GROUP + g
        gmask = g < GROUP
        # This split's tokens: [start, end), chunks rounded to whole tiles.
        chunk = tl.cdiv(tl.cdiv(seq_len, num_splits), T) * T
        start = split * chunk
        end = tl.minimum(start + chunk, seq_len)
        q = tl.load(q_ptr + row * sq_r + heads[:, None] * sq_h + d[None, :],
                    mask=gmask[:, None], other=0.0)
        m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
        l = tl.zeros([GROUP_PAD], tl.float32)
        acc = tl.zeros([GROUP_PAD, DV], tl.float32)
        for t0 in range(start, end, T):
            tok = t0 + tl.arange(0, T)
            tmask = tok < end
            block = tl.load(table_ptr + row * st_r + tok // block_size, mask=tmask, other=0)
            entry = tok % block_size
            k_off = block[:, None] * sk_b + entry[:, None] * sk_e + kvh * sk_h + d[None, :]
            v_off = block[:, None] * sv_b + entry[:, None] * sv_e + kvh * sv_h + dv[None, :]
            if FP8:
                k = tl.load(k_ptr + k_off, mask=tmask[:, None], other=0)
                k = (k.to(tl.float8e4nv, bitcast=True).to(tl.float32) * k_scale).to(tl.bfloat16)
                v = tl.load(v_ptr + v_off, mask=tmask[:, None], other=0)
                v = (v.to(tl.float8e4nv, bitcast=True).to(tl.float32) * v_scale).to(tl.bfloat16)
            else:
                k = tl.load(k_ptr + k_off, mask=tmask[:, None], other=0.0)
                v = tl.load(v_ptr + v_off, mask=tmask[:, None], other=0.0)
            s = tl.dot(q, tl.trans(k)) * scale
            s = tl.where(tmask[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))
            alpha = tl.exp(m - m_new)
            p = tl.exp(s - m_new[:, None])
            l = l * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
            m = m_new
        has = l > 0
        out = tl.where(has[:, None], acc / tl.where(has, l, 1.0)[:, None], 0.0)
        lse = tl.where(has, m + tl.log(tl.where(has, l, 1.0)), float("-inf"))
        base = (row * num_splits + split) * NQH + heads
        tl.store(part_o_ptr + base[:, None] * DV + dv[None, :], out, mask=gmask[:, None])
        tl.store(part_lse_ptr + base, lse, mask=gmask)

    @triton.jit
    def merge_kernel(part_o_ptr, part_lse_ptr, out_ptr, lse_ptr, lens_ptr, so_r, so_h,
                     num_splits, WRITE_LSE: tl.constexpr, NQH: tl.constexpr,
                     DV: tl.constexpr, SPLITS: tl.constexpr):
        row = tl.program_id(0)
        h = tl.program_id(1)
        if tl.load(lens_ptr + row) > 0:
            s = tl.arange(0, SPLITS)
            smask = s < num_splits
            base = (row * num_splits + s) * NQH + h
            lse = tl.load(part_lse_ptr + base, mask=smask, other=float("-inf"))
            mx = tl.max(lse, axis=0)
            w = tl.where(lse == float("-inf"), 0.0, tl.exp(lse - mx))
            total = tl.sum(w, axis=0)
            dv = tl.arange(0, DV)
            o = tl.load(part_o_ptr + base[:, None] * DV + dv[None, :], mask=smask[:, None],
                        other=0.0)
            o = tl.sum(o * w[:, None], axis=0) / total
            tl.store(out_ptr + row * so_r + h * so_h + dv, o.to(tl.bfloat16))
            if WRITE_LSE:
                tl.store(lse_ptr + row * NQH + h, mx + tl.log(total))

    return triton, split_kernel, merge_kernel


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def workspace_bytes(q):
    if q.op != "paged_decode":
        return 0
    return 4 * q.max_rows * q.max_splits * q.num_q_heads * (q.v_dim + 1)


def _decode(torch, triton, split_kernel, merge_kernel):
    def paged_decode(a):
        c = a.cache
        rows, nqh, d = a.num_rows, a.num_q_heads, c.head_dim
        dv = a.v_dim or d
        if rows == 0:
            return
        splits = max(1, a.max_splits)
        group = nqh // c.num_kv_heads
        ws = a.workspace.view(torch.float32)
        part_o = ws[:rows * splits * nqh * dv]
        part_lse = ws[rows * splits * nqh * dv:rows * splits * nqh * (dv + 1)]
        fp8 = c.dtype == "fp8_e4m3"
        k = c.k if fp8 else c.k.view(torch.bfloat16)
        v = c.v if fp8 else c.v.view(torch.bfloat16)
        q = a.q.view(torch.bfloat16)
        out = a.out.view(torch.bfloat16)
        split_kernel[(rows, c.num_kv_heads, splits)](
            q, k, v, a.block_table, a.seq_lens, part_o, part_lse,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), a.block_table.stride(0),
            a.scale, c.k_scale, c.v_scale, c.block_size, splits,
            GROUP=group, GROUP_PAD=max(16, _next_pow2(group)), D=d, DV=dv, NQH=nqh, FP8=fp8,
            T=TILE)
        lse = a.lse if a.lse is not None else part_lse
        merge_kernel[(rows, nqh)](
            part_o, part_lse, out, lse, a.seq_lens, out.stride(0), out.stride(1), splits,
            WRITE_LSE=a.lse is not None, NQH=nqh, DV=dv, SPLITS=_next_pow2(splits))
    return paged_decode


def kvcheck_backend(host):
    if host.device != "cuda":
        raise kvcheck.Unsupported("triton_decode runs a Triton kernel: --device cuda")
    if host.options:
        raise kvcheck.Unsupported(f"triton_decode takes no options, got {host.options!r}")
    import torch
    triton, split_kernel, merge_kernel = _kernels()
    return kvcheck.Backend(
        name="triton-decode", version=f"triton {triton.__version__}",
        caps=kvcheck.Caps(cache_dtypes=["bf16", "fp8_e4m3"],
                          layouts=["kv_separate", "kv_interleaved"], io_dtype="bf16",
                          head_dims=[64, 128, 256], lse_base="natural", graph_support="none"),
        ops={"paged_decode": _decode(torch, triton, split_kernel, merge_kernel)},
        workspace_bytes=workspace_bytes)
