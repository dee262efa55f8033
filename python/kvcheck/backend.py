"""What a Python backend module declares: its capabilities and conventions (Caps), its ops and
sizes (Backend), and what kvcheck tells it at start (Host).

A module is a backend when it defines

    def kvcheck_backend(host: kvcheck.Host) -> kvcheck.Backend

which kvcheck calls once, in its worker process, before any step (the C entry point
kvcheck_backend_init's twin). It may raise kvcheck.Unsupported to refuse the device or the
options: the run is then "cannot run" (exit 3) with that message.
"""

import dataclasses
import math
from typing import Callable, Dict, Optional, Sequence, Tuple

from . import abi


class Unsupported(Exception):
    """Raised by kvcheck_backend() to refuse: another device, bad options, a library missing."""


@dataclasses.dataclass(frozen=True)
class Host:
    device: str        # "host" (tensors are NumPy arrays) or "cuda" (torch tensors on the GPU)
    device_id: int     # the GPU kvcheck runs on (cuda); 0 on the host
    options: str       # --backend-option text, "" if none (module=... already taken off)


@dataclasses.dataclass
class Caps:
    """kvcheck_caps: what the backend accepts (None: any) and the conventions its ops follow."""
    cache_dtypes: Optional[Sequence[str]] = None  # of abi.CACHE_DTYPES
    layouts: Optional[Sequence[str]] = None       # of abi.LAYOUTS
    io_dtype: str = "f32"                         # q and out of the attention ops
    head_dims: Optional[Sequence[int]] = None
    block_sizes: Optional[Sequence[int]] = None
    gqa_ratios: Optional[Sequence[int]] = None
    mla_dims: Optional[Sequence[Tuple[int, int]]] = None  # (kv_lora_rank, qk_rope_dim) pairs
    lse_base: str = "natural"                     # or "base2"
    empty_row_lse: float = -math.inf              # or +math.inf
    pad_seq_len: int = 0                          # seq_len of graph-padded decode rows: 0 or 1
    pad_block_id: int = 0                         # table entry of padded rows: 0 or -1
    needs_zeroed_blocks: bool = False
    graph_support: str = "none"                   # "none", "decode" or "full"


@dataclasses.dataclass
class Backend:
    """kvcheck_backend: a name, a version and the ops (a subset of abi.OPS) as callables.

    Each op is called as op(a) with a namespace `a` of the op's arguments (the fields of the
    header's kvcheck_<op>_args, tensors as arrays) and writes its results into the arrays it is
    given (a.out, a.lse ...); it returns None. plan_bytes / workspace_bytes (optional) are called
    with a namespace of kvcheck_size_query's fields and return a byte count.
    """
    name: str
    version: str
    caps: Caps
    ops: Dict[str, Callable]
    paged_decode_plan: Optional[Callable] = None
    plan_bytes: Optional[Callable] = None
    workspace_bytes: Optional[Callable] = None
    close: Optional[Callable] = None  # called once at the end


def _choice(field, value, table):
    if value not in table:
        raise ValueError(f"caps.{field}: got {value!r}, expected one of {', '.join(table)}")
    return table[value] if isinstance(table, dict) else value


def _mask(field, names, table):
    """A bit mask of the header's values for a list of names; None (any) is 0."""
    if names is None:
        return 0
    if isinstance(names, str):
        raise ValueError(f"caps.{field}: got the string {names!r}, expected a list of names")
    bits = 0
    for n in names:
        value = abi.DTYPES.get(n) if table is abi.CACHE_DTYPES else table.get(n)
        if n not in table:
            raise ValueError(f"caps.{field}: got {n!r}, expected of {', '.join(table)}")
        bits |= 1 << value
    if not bits:
        raise ValueError(f"caps.{field}: an empty list accepts nothing; leave it None for any")
    return bits


def _ints(field, values, lo, hi):
    if values is None:
        return None
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"caps.{field}: got {v!r}, expected an integer in [{lo}, {hi}]")
        out.append(v)
    if not out:
        raise ValueError(f"caps.{field}: an empty list accepts nothing; leave it None for any")
    return out


def declaration(b):
    """The plain-data form of a Backend's name, version and caps that the C++ host reads (numbers
    as the header has them; the ops and optional callables it takes from the Backend itself).
    Raises ValueError naming the field for anything the header has no value for."""
    if not isinstance(b, Backend):
        raise ValueError(f"kvcheck_backend() returned {type(b).__name__}, expected kvcheck.Backend")
    if not isinstance(b.name, str) or not b.name:
        raise ValueError("name: expected a non-empty string")
    if not isinstance(b.version, str):
        raise ValueError("version: expected a string")
    c = b.caps
    if not isinstance(c, Caps):
        raise ValueError(f"caps: got {type(c).__name__}, expected kvcheck.Caps")
    if not isinstance(b.ops, dict) or not b.ops:
        raise ValueError("ops: expected a dict of at least one op name to a callable")
    for name, fn in b.ops.items():
        if name not in abi.OPS:
            raise ValueError(f"ops: unknown op {name!r}, expected of {', '.join(abi.OPS)}")
        if not callable(fn):
            raise ValueError(f"ops[{name!r}]: got {type(fn).__name__}, expected a callable")
    for field in ("paged_decode_plan", "plan_bytes", "workspace_bytes", "close"):
        if getattr(b, field) is not None and not callable(getattr(b, field)):
            raise ValueError(f"{field}: expected a callable or None")
    if b.paged_decode_plan is not None and b.plan_bytes is None:
        raise ValueError("paged_decode_plan needs plan_bytes to size the plan buffer")
    if c.empty_row_lse not in (-math.inf, math.inf):
        raise ValueError(f"caps.empty_row_lse: got {c.empty_row_lse!r}, expected -inf or +inf")
    if c.pad_seq_len not in (0, 1):
        raise ValueError(f"caps.pad_seq_len: got {c.pad_seq_len!r}, expected 0 or 1")
    if c.pad_block_id not in (0, -1):
        raise ValueError(f"caps.pad_block_id: got {c.pad_block_id!r}, expected 0 or -1")
    mla = None
    if c.mla_dims is not None:
        mla = []
        for pair in c.mla_dims:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ValueError(
                    f"caps.mla_dims: got {pair!r}, expected (kv_lora_rank, qk_rope_dim)")
            mla += _ints("mla_dims", pair, 0, 1 << 20)
    return {
        "name": b.name,
        "version": b.version,
        "cache_dtypes": _mask("cache_dtypes", c.cache_dtypes, abi.CACHE_DTYPES),
        "layouts": _mask("layouts", c.layouts, abi.LAYOUTS),
        "io_dtype": abi.DTYPES[_choice("io_dtype", c.io_dtype, abi.IO_DTYPES)],
        "head_dims": _ints("head_dims", c.head_dims, 1, 1 << 20),
        "block_sizes": _ints("block_sizes", c.block_sizes, 1, 1 << 20),
        "gqa_ratios": _ints("gqa_ratios", c.gqa_ratios, 1, 1 << 20),
        "mla_dims": mla,
        "lse_base": _choice("lse_base", c.lse_base, abi.LSE_BASES),
        "empty_row_lse": float(c.empty_row_lse),
        "pad_seq_len": c.pad_seq_len,
        "pad_block_id": c.pad_block_id,
        "needs_zeroed_blocks": 1 if c.needs_zeroed_blocks else 0,
        "graph_support": _choice("graph_support", c.graph_support, abi.GRAPH_SUPPORT),
    }
