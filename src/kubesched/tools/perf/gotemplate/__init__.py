"""Go's text/template, the part of it that kube-scheduler's scheduler_perf templates use.

scheduler_perf builds its objects from YAML files run through Go's text/template with a few
functions of its own (getTemplateFuncs in test/integration/scheduler_perf/operations.go). A
template here is parsed once into closures and executed once per object, with Go's results:

- text and actions, the trim markers `{{- ` and ` -}}`, comments `{{/* ... */}}`;
- `.`, `.Field.sub` (keys of mappings; a missing key is Go's "no value": printed `<no value>`,
  false in `if`, nil when passed to a function), `$`, `$x := ...`, `$x = ...`, scoped as in Go;
- pipelines, parenthesized pipelines, int/float/hex/octal/binary/char/string/raw-string literals,
  true, false, nil;
- if / else if / else, range (ints, lists, maps in key order; `$v :=`, `$i, $v :=`, else, break,
  continue), with / else with / else;
- the builtins and, or, not, eq, ne, lt, le, gt, ge, len, index, slice, print, printf, println,
  html and urlquery; values print as Go's fmt prints them.

Not supported (each a TemplateError that says so): define, template and block (one template per
file), the builtins call and js, and complex numbers.
Fields are keys of mappings only: Go's methods and struct fields have no Python counterpart here.

Data are Python values as YAML gives them: dict (a Go map), list or tuple (a slice), str, int, float,
bool (never an int) and None (nil). Execution is bounded: a range over an int above 10,000,000, more
than 10,000,000 range iterations in all, or more than 64 Mi characters of output is an error.

One result differs from Go's on purpose: where scheduler_perf's Int-returning functions convert a
float outside int64's range (or NaN, Inf), Go returns garbage (MinInt64 on amd64); here it is an error.

The modules, in the order a template goes through them: lexer (the text into tokens), parser (the
tokens into the tree of nodes), execute (the tree into closures, which run on runtime's state), and
template (Template, parse, render) over them all. values (no value, truth, type names), gostrconv,
gofmt and gojson (Go's strconv, fmt and encoding/json) are how values behave and print; funcs holds
the functions a template calls (the builtins and SCHEDULER_PERF_FUNCS); errors and limits are
shared by all.
"""

from kubesched.tools.perf.gotemplate.errors import TemplateError
from kubesched.tools.perf.gotemplate.funcs import SCHEDULER_PERF_FUNCS, FuncMap
from kubesched.tools.perf.gotemplate.template import Template, parse, render

__all__ = ["SCHEDULER_PERF_FUNCS", "FuncMap", "Template", "TemplateError", "parse", "render"]
