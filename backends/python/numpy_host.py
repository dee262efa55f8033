"""A kvcheck backend in NumPy: the decode op and the prefill chain (write_kv, paged_decode,
gather_kv, varlen_attention, merge_states) and the hybrid models' ops (linear_attention,
fill_blocks, quant_fp8), with the semantics of kvcheck's built-in host ops, in float32. It is the
Python host's own test (CI runs the default suite through it) and a template: copy it, replace an
op's body with your library's call, and run

    kvcheck run scenarios/smoke.json --backend python:numpy_host

`--backend-option prefill=fused` adds a paged_prefill (the whole prefill in one op, as a fused
library kernel does) in place of the chain.

The built-in ops' semantics kept here matter to verdicts: the decode plan carries each row's
length (as a library's planner carries its page lists), so a plan a graph replay does not see is
wrong output; paged_decode multiplies P.V over every
entry of the blocks a row touches (a masked entry has p = 0, and 0 x a stale NaN in a block's
unused tail is NaN: that is how kvcheck sees blocks that were never zeroed), and rows of seq_len 0
(graph padding) are left untouched.
"""

import numpy as np

import kvcheck
from kvcheck.numpy_dtypes import decode, encode, round_through

NEG_INF = np.float32(-np.inf)


def _blocks(cache, table_row, length):
    """The cache blocks holding a sequence's first `length` tokens, as float32 [tokens of the
    whole blocks][heads][head_dim] for K and V (V's full head_dim; the caller slices v_dim)."""
    count = -(-length // cache.block_size)
    ids = np.asarray(table_row[:count], dtype=np.int64)
    k = decode(cache.k[ids], cache.dtype) * np.float32(cache.k_scale)
    v = decode(cache.v[ids], cache.dtype) * np.float32(cache.v_scale)
    shape = (count * cache.block_size, cache.num_kv_heads, cache.head_dim)
    return k.reshape(shape), v.reshape(shape)


def write_kv(a):
    c = a.cache
    slots = np.asarray(a.slot_mapping[:a.num_tokens], dtype=np.int64)
    real = slots >= 0  # a negative slot is a padded row: skipped
    block, entry = slots[real] // c.block_size, slots[real] % c.block_size
    c.k[block, entry] = encode(a.k[:a.num_tokens][real] / np.float32(c.k_scale), c.dtype)
    if a.v is not None:  # MLA: the latent row is K, written once
        c.v[block, entry] = encode(a.v[:a.num_tokens][real] / np.float32(c.v_scale), c.dtype)


def _softmax_pv(scores, v, valid):
    """Softmax over keys of masked scores [kv heads, group, (queries,) keys] and its product with
    v [keys, kv heads, v_dim] over EVERY key (p = 0 where masked); returns (out [kv heads, group,
    (queries,) v_dim], natural lse [kv heads, group, (queries)])."""
    s = np.where(valid, scores, NEG_INF)
    m = np.max(s, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        p = np.where(s == NEG_INF, np.float32(0), np.exp(s - m))
        d = np.sum(p, axis=-1, keepdims=True)
        # P.V per kv head over all keys: 0 x NaN stays NaN, as in the built-in op.
        o = np.einsum("hg...t,thv->hg...v", p, v)
        o = np.where(d != 0, o / d, o)
        lse = np.where(d > 0, m + np.log(d), np.where(d == 0, NEG_INF, np.float32(np.nan)))
    return o, lse[..., 0]


def plan_bytes(q):
    return 4 * max(q.max_rows, 1)


def paged_decode_plan(a):
    """The decode plan, as a library's planner makes it on the host before each decode step: here
    each row's length, which paged_decode reads from the plan (not from seq_lens), so a plan that
    a CUDA-graph replay does not see (written elsewhere, kvcheck's seed 003) shows in the output."""
    lengths = np.asarray(a.seq_lens_host, dtype=np.int32)
    a.plan[:lengths.nbytes] = lengths.view(np.uint8)


def paged_decode(a):
    c = a.cache
    hd = c.head_dim
    vd = a.v_dim or hd
    group = a.num_q_heads // c.num_kv_heads
    lengths = a.plan[:4 * a.num_rows].view(np.int32)
    for r in range(a.num_rows):
        length = int(lengths[r])
        if length <= 0:
            continue  # a padded row writes nothing
        k, v = _blocks(c, a.block_table[r], length)
        q = a.q[r].reshape(c.num_kv_heads, group, hd)
        scores = np.einsum("hgd,thd->hgt", q, k) * np.float32(a.scale)
        valid = np.arange(k.shape[0]) < length
        o, lse = _softmax_pv(scores, v[:, :, :vd], valid)
        a.out[r] = o.reshape(a.num_q_heads, vd)
        if a.lse is not None:
            a.lse[r] = lse.reshape(a.num_q_heads)


def gather_kv(a):
    c = a.cache
    for s in range(a.num_seqs):
        length, start = int(a.ctx_lens[s]), int(a.ctx_starts[s])
        if length <= 0:
            continue
        k, v = _blocks(c, a.block_table[s], length)
        a.k_out[start:start + length] = k[:length]
        if a.v_out is not None:
            a.v_out[start:start + length] = v[:length]


def varlen_attention(a):
    vd = a.v_dim or a.head_dim
    group = a.num_q_heads // a.num_kv_heads
    for s in range(a.num_seqs):
        q0, q1 = int(a.q_starts[s]), int(a.q_starts[s + 1])
        k0, k1 = int(a.k_starts[s]), int(a.k_starts[s + 1])
        if q1 == q0:
            continue
        n = k1 - k0
        if n == 0:  # no keys: the empty state
            a.out[q0:q1] = 0
            a.lse[q0:q1] = NEG_INF
            continue
        # K and V as the cache would store them (new tokens attend in the cache's precision).
        k = round_through(a.k[k0:k1], a.kv_dtype, a.k_scale)
        v = round_through(a.v[k0:k1], a.kv_dtype, a.v_scale)[:, :, :vd]
        rows = q1 - q0
        q = a.q[q0:q1].reshape(rows, a.num_kv_heads, group, a.head_dim)
        scores = np.einsum("jhgd,thd->hgjt", q, k) * np.float32(a.scale)
        keys = np.arange(n)
        valid = (keys[None, :] <= np.arange(rows)[:, None] if a.causal
                 else np.ones((rows, n), dtype=bool))
        o, lse = _softmax_pv(scores, v, valid)
        a.out[q0:q1] = o.transpose(2, 0, 1, 3).reshape(rows, a.num_q_heads, vd)
        a.lse[q0:q1] = lse.transpose(2, 0, 1).reshape(rows, a.num_q_heads)


def merge_states(a):
    m_rows = a.num_merge
    la, lb = a.lse_a[:m_rows], a.lse_b[:m_rows]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.maximum(la, lb)
        ea, eb = np.exp(la - m), np.exp(lb - m)
        total = ea + eb
        wa, wb, lse = ea / total, eb / total, m + np.log(total)
    empty = (la == NEG_INF) & (lb == NEG_INF)
    nan = np.isnan(la) | np.isnan(lb)
    wa, wb = np.where(empty, 0, wa), np.where(empty, 0, wb)
    lse = np.where(empty, NEG_INF, lse)
    wa, wb, lse = (np.where(nan, np.float32(np.nan), x).astype(np.float32) for x in (wa, wb, lse))
    a.out[:m_rows] = wa[..., None] * a.out_a[:m_rows] + wb[..., None] * a.out_b[:m_rows]
    a.out[m_rows:a.num_rows] = a.out_b[m_rows:a.num_rows]
    if a.lse_out is not None:
        a.lse_out[:m_rows] = lse
        a.lse_out[m_rows:a.num_rows] = a.lse_b[m_rows:a.num_rows]


def linear_attention(a):
    d = a.head_dim
    for s in range(a.num_seqs):
        block = int(a.state_blocks[s])
        if block < 0:
            continue  # a padded row: reads and writes nothing
        r0, r1 = int(a.seq_starts[s]), int(a.seq_starts[s + 1])
        state = (np.array(a.state[block], dtype=np.float32) if a.has_initial_state[s]
                 else np.zeros((a.num_heads, d, d), dtype=np.float32))
        for r in range(r0, r1):
            with np.errstate(over="ignore"):
                g = np.float32(1) / (np.float32(1) + np.exp(-a.gate[r]))
            state = g[:, None, None] * state + a.k[r][:, :, None] * a.v[r][:, None, :]
            a.out[r] = np.float32(a.scale) * np.einsum("hi,hij->hj", a.q[r], state)
        a.state[block] = state


def quant_fp8(a):
    rows = int(a.amax_rows[0]) if a.amax_rows is not None else a.amax_rows_fixed
    x = np.array(a.x[:a.num_rows])  # y may alias x
    head = x[:rows]
    amax = (np.float32(np.nan) if np.isnan(head).any()
            else (np.abs(head).max() if head.size else np.float32(0)))
    scale = np.float32(amax) / np.float32(448)
    if a.scale_out is not None:
        a.scale_out[0] = scale
    a.y[:a.num_rows] = x if amax == 0 else round_through(x, "fp8_e4m3", scale)


def fill_blocks(a):
    c = a.cache
    ids = np.asarray(a.block_ids[:a.num_ids], dtype=np.int64)
    pages = [c.k] if c.layout == "mla_latent" else [c.k, c.v]  # MLA: one page
    rng = np.random.default_rng(a.seed)
    for page in pages:
        if a.pattern == "random_bits":
            bits = np.iinfo(np.dtype(f"u{page.itemsize}")).max
            words = rng.integers(0, bits, size=page[ids].shape, dtype=f"u{page.itemsize}",
                                 endpoint=True)
            page[ids] = words.view(page.dtype)
        else:
            value = {"zero": 0.0, "nan": np.nan, "inf": np.inf}[a.pattern]
            page[ids] = encode(np.full(page[ids].shape, value, dtype=np.float32), c.dtype)


def paged_prefill(a):
    """The fused prefill: each sequence's new rows over its cached context and, causally, over
    themselves, all from the paged cache (write_kv stored the new tokens first)."""
    c = a.cache
    hd = c.head_dim
    vd = a.v_dim or hd
    group = a.num_q_heads // c.num_kv_heads
    for s in range(a.num_seqs):
        q0, q1 = int(a.q_starts[s]), int(a.q_starts[s + 1])
        ctx = int(a.ctx_lens[s])
        if q1 == q0:
            continue
        rows = q1 - q0
        total = ctx + rows
        k, v = _blocks(c, a.block_table[s], total)
        q = a.q[q0:q1].reshape(rows, c.num_kv_heads, group, hd)
        scores = np.einsum("jhgd,thd->hgjt", q, k[:total]) * np.float32(a.scale)
        valid = np.arange(total)[None, :] <= ctx + np.arange(rows)[:, None]
        o, lse = _softmax_pv(scores, v[:total, :, :vd], valid)
        a.out[q0:q1] = o.transpose(2, 0, 1, 3).reshape(rows, a.num_q_heads, vd)
        if a.lse is not None:
            a.lse[q0:q1] = lse.transpose(2, 0, 1).reshape(rows, a.num_q_heads)


def kvcheck_backend(host):
    if host.device != "host":
        raise kvcheck.Unsupported("numpy_host runs on the host device only (--device host)")
    fused = False
    for item in filter(None, host.options.split(",")):
        if item == "prefill=fused":
            fused = True
        elif item != "prefill=chain":
            raise kvcheck.Unsupported(f"unknown option {item!r} (known: prefill=chain|fused)")
    ops = {"write_kv": write_kv, "paged_decode": paged_decode, "gather_kv": gather_kv,
           "varlen_attention": varlen_attention, "merge_states": merge_states,
           "linear_attention": linear_attention, "fill_blocks": fill_blocks,
           "quant_fp8": quant_fp8}
    if fused:
        ops["paged_prefill"] = paged_prefill
    return kvcheck.Backend(
        name="numpy-host", version="1",
        caps=kvcheck.Caps(cache_dtypes=["f32", "f16", "bf16", "fp8_e4m3"],
                          layouts=["kv_separate", "kv_interleaved", "mla_latent"],
                          io_dtype="f32", lse_base="natural", graph_support="full"),
        ops=ops, paged_decode_plan=paged_decode_plan, plan_bytes=plan_bytes)
