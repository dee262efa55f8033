"""A backend whose paged_decode does nothing but touch every argument it gets: the Python host's
own cost per op call (tests/python_host/call_cost.cpp, results/python-host.md)."""
import kvcheck


def paged_decode(a):
    c = a.cache
    for t in (a.q, a.out, a.lse, a.block_table, a.seq_lens, a.plan, a.workspace, c.k, c.v):
        if t is not None:
            t.shape  # noqa: B018 - the touch
    return None


def kvcheck_backend(host):
    return kvcheck.Backend(name="noop", version="1", caps=kvcheck.Caps(),
                           ops={"paged_decode": paged_decode})
