"""Q1/Q2: node-type census of a PrimFunc (parsed or after passes); call op names and their string modifiers."""
import sys, collections
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent)); sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
import tvm
from tvm import tirx
from tvm.tirx import stmt as S

def children(n):
    """Generic child enumeration for tirx Stmt/Expr nodes (via reflected fields)."""
    out = []
    for name in ("seq","body","then_case","else_case","condition","value","min","extent","args","indices","a","b","true_value","false_value","node"):
        try:
            v = getattr(n, name)
        except Exception:
            continue
        if v is None: continue
        if isinstance(v, (list, tuple)) or type(v).__name__ in ("Array",):
            out.extend(x for x in v if isinstance(x, tvm.runtime.Object))
        elif isinstance(v, tvm.runtime.Object):
            out.append(v)
    return out

def census(fn, title):
    types = collections.Counter(); calls = collections.Counter(); tiles = collections.Counter()
    seen=set()
    def go(n):
        types[type(n).__name__] += 1
        if type(n).__name__ == "Call":
            op = n.op.name if hasattr(n.op, "name") else str(n.op)
            strs = tuple(a.value for a in n.args if type(a).__name__ == "StringImm")
            calls[(op, strs)] += 1
        if type(n).__name__.endswith("TilePrimitiveCall") or isinstance(n, tvm.tirx.tile_primitive.TilePrimitiveCall):
            tiles[(n.op.name, n.dispatch, n.scope.name)] += 1
        for c in children(n): go(c)
    go(fn.body)
    print("=====", title)
    print("node types:", dict(types))
    print("calls:")
    for (op, strs), c in sorted(calls.items()): print(f"  {c:4d} {op} {strs}")
    print("tile primitive calls:", dict(tiles))

if __name__ == "__main__":
    from get_funcs import seed, hop
    census(seed("v4"), "seed v4 parsed")
    census(hop("v4"), "hopper v4 parsed")
