"""PyTorch's scaled_dot_product_attention kernels as kvcheck's varlen_attention: the prefill
chain's attention over contiguous K/V (context, and the new tokens causally), one call per
sequence, with the LSE from the SDPA backend's own entry point (kvcheck's merge combines the two
parts by it). One backend per kernel:

    kvcheck run S.json --device cuda --backend python:torch_sdpa --backend-option sdpa=flash
    (sdpa=flash: FlashAttention-2; sdpa=efficient: memory-efficient; sdpa=cudnn: cuDNN)

bf16 io; K/V are rounded as the cache stores them (bf16, or fp8 e4m3 with its scale), then given
to the kernel in bf16. GQA by repeating K/V heads (the private entry points take equal heads).
Head dims 64, 128, 256; no MLA (its 576-wide latent rows exceed every SDPA kernel). The kernels
allocate through PyTorch's caching allocator, which a CUDA graph could not replay; kvcheck never
captures the prefill steps that call this op, so the declaration allows graphs for the rest.
"""
import math

import kvcheck

KINDS = ("flash", "efficient", "cudnn")


def _stored(torch, x, dtype, scale):
    """Float32 rows as the cache would hold them, in bf16 for the kernel."""
    if dtype == "fp8_e4m3":
        y = (x / scale).clamp(-448.0, 448.0)  # kvcheck's fp8 saturates; NaN stays NaN
        x = y.to(torch.float8_e4m3fn).float() * scale
    elif dtype == "f16":
        x = (x / scale).half().float() * scale
    elif dtype == "bf16" and scale != 1.0:
        x = (x / scale).bfloat16().float() * scale
    return x.to(torch.bfloat16)


def _attend(torch, kind, q, k, v, causal, scale):
    """out [1, H, S, D] and natural-log lse [1, H, S] of one sequence, by the SDPA kernel `kind`."""
    aten = torch.ops.aten
    s = q.shape[2]
    if kind == "flash":
        r = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
        return r[0], r[1]
    if kind == "efficient":
        r = aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal,
                                                         scale=scale)
        return r[0], r[1][..., :s]  # its lse rows are padded to a multiple of 32
    r = aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False,
                                                 scale=scale)
    return r[0], r[1].reshape(q.shape[0], q.shape[1], -1)[..., :s]


def _varlen(torch, kind):
    def varlen_attention(a):
        vd = a.v_dim or a.head_dim
        group = a.num_q_heads // a.num_kv_heads
        q_all, out_all = a.q.view(torch.bfloat16), a.out.view(torch.bfloat16)
        qs, ks = a.q_starts_host, a.k_starts_host
        for s in range(a.num_seqs):
            q0, q1, k0, k1 = qs[s], qs[s + 1], ks[s], ks[s + 1]
            if q1 == q0:
                continue
            if k1 == k0:  # no keys: the empty state
                out_all[q0:q1] = 0
                a.lse[q0:q1] = -math.inf
                continue
            q = q_all[q0:q1].transpose(0, 1).unsqueeze(0)
            k = _stored(torch, a.k[k0:k1], a.kv_dtype, a.k_scale).transpose(0, 1).unsqueeze(0)
            v = _stored(torch, a.v[k0:k1, :, :vd], a.kv_dtype, a.v_scale)
            v = v.transpose(0, 1).unsqueeze(0)
            if group > 1:
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            o, lse = _attend(torch, kind, q, k, v, bool(a.causal), a.scale)
            out_all[q0:q1] = o[0].transpose(0, 1)
            a.lse[q0:q1] = lse[0].transpose(0, 1)
    return varlen_attention


def kvcheck_backend(host):
    if host.device != "cuda":
        raise kvcheck.Unsupported("torch_sdpa runs PyTorch's CUDA kernels: --device cuda")
    kind = "flash"
    for item in filter(None, host.options.split(",")):
        key, _, value = item.partition("=")
        if key != "sdpa" or value not in KINDS:
            raise kvcheck.Unsupported(
                f"unknown option {item!r} (known: sdpa=flash|efficient|cudnn)")
        kind = value
    import torch
    return kvcheck.Backend(
        name=f"torch-sdpa-{kind}", version=f"torch {torch.__version__}",
        caps=kvcheck.Caps(cache_dtypes=["bf16", "fp8_e4m3"],
                          layouts=["kv_separate", "kv_interleaved"], io_dtype="bf16",
                          head_dims=[64, 128, 256], lse_base="natural",
                          # only prefill steps call varlen_attention, and kvcheck never captures
                          # those: the decode steps stay graphed on the built-in ops
                          graph_support="full"),
        ops={"varlen_attention": _varlen(torch, kind)})
