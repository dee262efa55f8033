"""The vocabulary of kvcheck's backend ABI (include/kvcheck/backend.h, version 1) as Python names.

The header is the reference: every name here is the one `kvcheck list --backend` prints and every
number the header's enum value (ctest python/vocabulary holds the two together).
"""

ABI_VERSION = 1

# kvcheck_dtype: element types. bf16 and fp8_e4m3 arrive in Python as uint16 / uint8 views.
DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "fp8_e4m3": 3, "i32": 16, "i64": 17, "u8": 18}
CACHE_DTYPES = ("f32", "f16", "bf16", "fp8_e4m3")
IO_DTYPES = ("f32", "f16", "bf16")

# kvcheck_kv_layout: how a layer's K and V pages sit in the cache.
LAYOUTS = {"kv_separate": 0, "kv_interleaved": 1, "mla_latent": 2}

# kvcheck_op: the ops a backend may implement, in the table's order.
OPS = ("write_kv", "paged_decode", "gather_kv", "varlen_attention", "merge_states",
       "linear_attention", "fill_blocks", "quant_fp8", "paged_prefill")

# kvcheck_lse_base: "natural" (ln) or "base2" (log2) for every lse a backend reads or writes.
LSE_BASES = {"natural": 0, "base2": 1}

# kvcheck_graph_support: which steps kvcheck may capture into CUDA graphs with this backend.
GRAPH_SUPPORT = {"none": 0, "decode": 1, "full": 2}

# kvcheck_fill_pattern (fill_blocks' `pattern`).
FILL_PATTERNS = {"zero": 0, "nan": 1, "inf": 2, "random_bits": 3}

# The storage type each ABI dtype arrives as, NumPy spelling.
NUMPY_VIEW = {"f32": "float32", "f16": "float16", "bf16": "uint16", "fp8_e4m3": "uint8",
              "i32": "int32", "i64": "int64", "u8": "uint8"}
