# The one private helper of z3/z3.py that karyamorph calls: wrapping a C-API term as the
# ExprRef subclass of its sort (terms.py and encoding.py build terms through the C API).
from z3 import Ast, Context, ExprRef

def _to_expr_ref(a: Ast, ctx: Context) -> ExprRef: ...
