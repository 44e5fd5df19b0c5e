/*
 * export_py.c — `export python "file.py"` (LANGUAGE.md §8.2): a Python
 * module that needs only NumPy and a C compiler.
 *
 * The module carries the C of §8.1 (cgen_text, with the exact Jacobian
 * of cgen_jac.h) as a string, builds it on first import into a cache
 * folder under the hash of its text — the user's own folder, refused
 * when others may write it; a cached object used only when the text
 * beside it is the same, byte for byte, as native.c does for `set
 * compile = on` — and loads it with ctypes.  Without a compiler the
 * import raises an ImportError that says so.
 *
 * The right-hand side is the hot path of solve_ivp: it copies y into a
 * buffer whose address is known, calls the C, and returns a copy of the
 * output buffer, so that one call costs one ctypes call and two small
 * copies (doc/performance.md measures it against the C called from C).
 *
 * Must not: print except through the context's streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "interp/base/outfile.h"
#include "interp/cli/stmts.h"
#include "interp/eom/cgen.h"

/* S as a Python string literal (double quotes; backslashes, quotes and
 * control characters escaped; UTF-8 kept: Python 3 source is UTF-8). */
static void py_string(strbuf_t *b, const char *s)
{
    strbuf_add(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '"')
            strbuf_addf(b, "\\%c", *p);
        else if (*p == '\n')
            strbuf_add(b, "\\n");
        else if (*p == '\t')
            strbuf_add(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            strbuf_addf(b, "\\x%02x", *p);
        else
            strbuf_addf(b, "%c", *p);
    }
    strbuf_add(b, "\"");
}

/* NAME = [“a”, “b”, …] */
static void py_names(strbuf_t *b, const char *var, const char *const *names,
                     size_t n)
{
    strbuf_addf(b, "%s = [", var);
    for (size_t k = 0; k < n; k++) {
        strbuf_add(b, k ? ", " : "");
        py_string(b, names[k]);
    }
    strbuf_add(b, "]\n");
}

/* NAME = [x, y, …], each number as repr() would read it back. */
static void py_numbers(strbuf_t *b, const char *var, const double *x,
                       size_t n)
{
    strbuf_addf(b, "%s = np.array([", var);
    for (size_t k = 0; k < n; k++)
        strbuf_addf(b, "%s%.17g", k ? ", " : "", x[k]);
    strbuf_add(b, "], dtype=np.float64)\n");
}

/* The C text as a Python string, one literal per line. */
static void py_c_source(strbuf_t *b, const char *text)
{
    strbuf_add(b, "_C_SOURCE = (\n");
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        char *line = xmalloc(len + 1);
        memcpy(line, p, len);
        line[len] = '\0';
        strbuf_add(b, "    ");
        py_string(b, line);
        strbuf_add(b, "\n");
        free(line);
        p += len;
    }
    strbuf_add(b, ")\n\n");
}

/* The part of the module that does not depend on the model: the build,
 * the loading and the functions.  %s is the C prefix, NAME. */
static const char py_body[] =
    "def _cache_dir():\n"
    "    base = os.environ.get(\"XDG_CACHE_HOME\", \"\")\n"
    "    if not base.startswith(\"/\"):  # the XDG spec: a relative one is ignored\n"
    "        base = os.path.join(os.path.expanduser(\"~\"), \".cache\")\n"
    "    d = os.path.join(base, \"nh\", \"python\")\n"
    "    os.makedirs(d, mode=0o700, exist_ok=True)\n"
    "    st = os.stat(d)\n"
    "    if st.st_uid != os.getuid() or st.st_mode & 0o022:\n"
    "        raise ImportError(\"%%s: the build cache %%s is refused: it must be \"\n"
    "                          \"the user's own and writable by no one else\"\n"
    "                          %% (__name__, d))\n"
    "    return d\n"
    "\n"
    "\n"
    "def _compiler():\n"
    "    words = os.environ.get(\"CC\", \"\").split() or [\"cc\"]\n"
    "    if shutil.which(words[0]) is None:\n"
    "        raise ImportError(\n"
    "            \"%%s needs a C compiler to build its equations on first \"\n"
    "            \"import, and %%r was not found: install one (e.g. \"\n"
    "            \"`apt-get install gcc`) or name it in $CC\" %% (__name__, words[0]))\n"
    "    return words\n"
    "\n"
    "\n"
    "def _build():\n"
    "    cc = _compiler()\n"
    "    flags = [\"-std=c99\", \"-O2\", \"-ffp-contract=off\", \"-fPIC\", \"-shared\"]\n"
    "    key = (_C_SOURCE + \"\\n/* built by: \" + \" \".join(cc + flags) +\n"
    "           \" -lm */\\n\").encode(\"utf-8\")\n"
    "    digest = hashlib.sha256(key).hexdigest()\n"
    "    d = _cache_dir()\n"
    "    so = os.path.join(d, digest + \".so\")\n"
    "    src = os.path.join(d, digest + \".c\")\n"
    "    try:  # used only when its text is this one, byte for byte\n"
    "        with open(src, \"rb\") as f:\n"
    "            same = f.read() == key\n"
    "    except OSError:\n"
    "        same = False\n"
    "    if same and os.path.isfile(so):\n"
    "        return so\n"
    "    fd, tmp_c = tempfile.mkstemp(suffix=\".c\", dir=d)\n"
    "    tmp_so = tmp_c[:-2] + \".so\"\n"
    "    try:\n"
    "        with os.fdopen(fd, \"wb\") as f:\n"
    "            f.write(key)\n"
    "        r = subprocess.run(cc + flags + [\"-o\", tmp_so, tmp_c, \"-lm\"],\n"
    "                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
    "        if r.returncode != 0:\n"
    "            msg = r.stderr.decode(\"utf-8\", \"replace\").strip().splitlines()\n"
    "            raise ImportError(\"%%s: the C compiler %%r failed to build the \"\n"
    "                              \"equations: %%s\" %% (__name__, cc[0],\n"
    "                                               msg[-1] if msg else \"no message\"))\n"
    "        os.replace(tmp_so, so)\n"
    "        os.replace(tmp_c, src)\n"
    "    finally:\n"
    "        for p in (tmp_c, tmp_so):\n"
    "            if os.path.exists(p):\n"
    "                os.unlink(p)\n"
    "    return so\n"
    "\n"
    "\n"
    "_lib = ctypes.CDLL(_build())\n"
    "_dp = ctypes.c_void_p\n"
    "_rhs_c = _lib.%s_py_rhs\n"
    "_rhs_c.argtypes = []\n"
    "_rhs_c.restype = ctypes.c_int\n"
    "_jac_c = _lib.%s_jacobian\n"
    "_jac_c.argtypes = [ctypes.c_double, _dp, _dp, _dp, _dp]\n"
    "_jac_c.restype = ctypes.c_int\n"
    "_res_c = _lib.%s_residuals\n"
    "_res_c.argtypes = [ctypes.c_double, _dp, _dp, _dp]\n"
    "_res_c.restype = None\n"
    "_values_c = _lib.%s_values\n"
    "_values_c.argtypes = [_dp]\n"
    "_values_c.restype = ctypes.c_int\n"
    "_mon_c = _lib.%s_monitors_vector\n"
    "_mon_c.argtypes = [_dp, _dp]\n"
    "_mon_c.restype = None\n"
    "_NJW = ctypes.c_int.in_dll(_lib, \"%s_jacobian_work\").value\n"
    "\n"
    "_NS = len(state_names)\n"
    "_NP = len(param_names) + len(input_names)\n"
    "_P0 = np.concatenate([param_defaults, input_defaults])\n"
    "_P0.setflags(write=False)\n"
    "# rhs's arguments and result in the C's own buffers (a call without\n"
    "# arguments is the cheapest ctypes makes)\n"
    "_T = ctypes.c_double.in_dll(_lib, \"%s_py_t\")\n"
    "_Y = np.ctypeslib.as_array((ctypes.c_double * max(_NS, 1)).in_dll(\n"
    "    _lib, \"%s_py_y\"))[:_NS]\n"
    "_F = np.ctypeslib.as_array((ctypes.c_double * max(_NS, 1)).in_dll(\n"
    "    _lib, \"%s_py_dydt\"))[:_NS]\n"
    "_PB = np.ctypeslib.as_array((ctypes.c_double * max(_NP, 1)).in_dll(\n"
    "    _lib, \"%s_py_p\"))[:_NP]\n"
    "_PB[:] = _P0\n"
    "_custom_p = False  # _PB holds another p than the defaults\n"
    "\n"
    "\n"
    "class EquationsError(ArithmeticError):\n"
    "    \"\"\"The equations cannot be evaluated at a state: a matrix of the\n"
    "    method is singular there, or a value is not finite.\"\"\"\n"
    "\n"
    "\n"
    "def _fail(what, rc, t):\n"
    "    why = (\"a matrix of the method (%%s) is singular\" %% method if rc == 1\n"
    "           else \"a value is not finite\")\n"
    "    raise EquationsError(\"%%s: %%s at t = %%r: %%s\" %% (__name__, what, t, why))\n"
    "\n"
    "\n"
    "def _params(p):\n"
    "    \"\"\"p as a C array: the parameters, then the inputs (the inputs may\n"
    "    be left off: they take input_defaults).\"\"\"\n"
    "    if p is None:\n"
    "        return _P0\n"
    "    p = np.array(p, dtype=np.float64).ravel()\n"
    "    if p.size == len(param_names) and input_names:\n"
    "        p = np.concatenate([p, input_defaults])\n"
    "    if p.size != _NP:\n"
    "        raise ValueError(\"%%s: p holds %%d values (the parameters %%s, then \"\n"
    "                         \"the inputs %%s), not %%d\"\n"
    "                         %% (__name__, _NP, param_names, input_names, p.size))\n"
    "    return p\n"
    "\n"
    "\n"
    "def _state(y):\n"
    "    y = np.ascontiguousarray(y, dtype=np.float64)\n"
    "    if y.shape != (_NS,):\n"
    "        raise ValueError(\"%%s: y holds the %%d values of state_names, not \"\n"
    "                         \"an array of shape %%r\" %% (__name__, _NS, y.shape))\n"
    "    return y\n"
    "\n"
    "\n"
    "def rhs(t, y, p=None):\n"
    "    \"\"\"dy/dt at (t, y): SciPy's solve_ivp(rhs, ..., args=(p,)) form.  Not\n"
    "    for two threads at once (it writes the module's buffers).\"\"\"\n"
    "    global _custom_p\n"
    "    try:\n"
    "        _Y[:] = y\n"
    "    except ValueError:\n"
    "        _state(y)\n"
    "        raise\n"
    "    if p is not None:\n"
    "        _PB[:] = _params(p) if len(p) != _NP else p\n"
    "        _custom_p = True\n"
    "    elif _custom_p:\n"
    "        _PB[:] = _P0\n"
    "        _custom_p = False\n"
    "    _T.value = t\n"
    "    rc = _rhs_c()\n"
    "    if rc:\n"
    "        _fail(\"the right-hand side\", rc, t)\n"
    "    return _F.copy()\n"
    "\n"
    "\n"
    "def jacobian(t, y, p=None):\n"
    "    \"\"\"d(dy/dt)/dy at (t, y), exact (the tapes' forward-mode derivatives\n"
    "    and the method's solve differentiated implicitly): row i holds the\n"
    "    derivatives of dy_i/dt.  solve_ivp's jac= takes it as it is.\"\"\"\n"
    "    y = _state(y)\n"
    "    pp = _params(p)\n"
    "    jac = np.empty((_NS, _NS))\n"
    "    work = np.empty(max(_NJW, 1))\n"
    "    rc = _jac_c(t, y.ctypes.data, pp.ctypes.data, jac.ctypes.data,\n"
    "                work.ctypes.data)\n"
    "    if rc:\n"
    "        _fail(\"the Jacobian\", rc, t)\n"
    "    return jac\n"
    "\n"
    "\n"
    "def monitors(t, y, p=None):\n"
    "    \"\"\"What nh's simulate watches, named by monitor_names: the residual\n"
    "    of each constraint (f for a holonomic one, C at the velocities the\n"
    "    state determines for the others), then the energy function\n"
    "    sum(q' dL/dq') - L.\"\"\"\n"
    "    y = _state(y)\n"
    "    pp = _params(p)\n"
    "    res = np.empty(max(len(constraint_names), 1))\n"
    "    _res_c(t, y.ctypes.data, pp.ctypes.data, res.ctypes.data)\n"
    "    v = np.full(len(_VALUE_NAMES), np.nan)\n"
    "    v[_STATE_AT] = y\n"
    "    v[_PARAM_AT] = pp\n"
    "    v[_T_AT] = t\n"
    "    rc = _values_c(v.ctypes.data)\n"
    "    if rc:\n"
    "        _fail(\"the monitors\", rc, t)\n"
    "    mon = np.empty(_NMON)\n"
    "    _mon_c(v.ctypes.data, mon.ctypes.data)\n"
    "    energy = float(np.dot(v[_QD_AT], mon[_NMON - len(_QD_AT):]) -\n"
    "                   mon[_NMON - len(_QD_AT) - 1])\n"
    "    return np.concatenate([res[:len(constraint_names)], [energy]])\n";

int export_python(ctx_t *s, const ast_stmt_t *st, diag_t *err)
{
    const char *path = st->u.export_.path;
    src_span_t pspan = st->u.export_.span;
    char name[80];
    if (!cgen_name_from_path(path, ".py", name, sizeof name))
        return diag_error(err, pspan,
                          "the module is named after the file (\"bike.py\" "
                          "gives `import bike`): '%s' must begin with a "
                          "letter and be at most 64 characters",
                          path);
    if (s->model.method < 0)
        return diag_error(err, st->span,
                          "no equations chosen: export python writes the "
                          "chosen method's right-hand side; choose one "
                          "first (`equations multipliers`, `equations "
                          "voronec`, ...)");
    eom_t *e = ctx_eom(s, st->span, err);
    if (!e)
        return -1;
    const nh_system_t *sys = lower_system(s->lw);
    const model_t *m = &s->model;
    expr_graph_t *g = lower_graph(s->lw);
    double *params = xcalloc(sys->np + sys->ni + 1, sizeof *params);
    for (size_t k = 0; k < sys->np; k++)
        params[k] = m->params.v[k].value;
    for (size_t k = 0; k < sys->ni; k++)
        params[sys->np + k] = m->inputs.v[k].value;
    cgen_options_t opt = {.name = name, .params = params,
                          .inputs = params + sys->np,
                          .version = PACKAGE_VERSION, .jacobian = true};
    char *text = cgen_text(e, &opt, err);
    if (!text) {
        free(params);
        err->span = st->span;
        return -1;
    }
    size_t ns = eom_state_size(e), nv = expr_graph_nvars(g);
    const uint32_t *sv = eom_state_vars(e);
    const char **names = xcalloc(nv + ns + 1, sizeof *names);

    strbuf_t b;
    strbuf_init(&b);
    strbuf_addf(&b,
                "\"\"\"%s: the equations of motion of an nh model, method %s "
                "(generated by\n"
                "nh %s, `export python`, LANGUAGE.md section 8.2).\n\n"
                "    rhs(t, y, p=None)       dy/dt, as SciPy's solve_ivp(rhs, "
                "..., args=(p,))\n"
                "                            calls it\n"
                "    jacobian(t, y, p=None)  d(dy/dt)/dy, exact (solve_ivp's "
                "jac=)\n"
                "    monitors(t, y, p=None)  the constraints' residuals and "
                "the energy\n"
                "    state_names, param_names, param_defaults, input_names, "
                "input_defaults,\n"
                "    constraint_names, monitor_names, method\n\n"
                "y holds the state (state_names); p the parameters, then the "
                "inputs\n"
                "(param_names + input_names; the inputs may be left off, and "
                "p=None is\n"
                "the values the model had when it was exported).  Needs "
                "NumPy and a C\n"
                "compiler ($CC, or cc): the C text below is built once, on "
                "first import,\n"
                "into $XDG_CACHE_HOME/nh/python (or ~/.cache/nh/python) "
                "under the hash of\n"
                "its text.\n"
                "\"\"\"\n"
                "import ctypes\n"
                "import hashlib\n"
                "import os\n"
                "import shutil\n"
                "import subprocess\n"
                "import tempfile\n\n"
                "import numpy as np\n\n",
                name, eom_method_name(eom_method(e)), PACKAGE_VERSION);
    strbuf_addf(&b, "method = \"%s\"\n", eom_method_name(eom_method(e)));
    for (size_t k = 0; k < ns; k++)
        names[k] = expr_var_name(g, sv[k]);
    py_names(&b, "state_names", names, ns);
    py_names(&b, "param_names", sys->pname, sys->np);
    py_numbers(&b, "param_defaults", params, sys->np);
    py_names(&b, "input_names", sys->iname, sys->ni);
    py_numbers(&b, "input_defaults", params + sys->np, sys->ni);
    py_names(&b, "constraint_names", sys->cname, sys->r);
    strbuf_add(&b, "monitor_names = constraint_names + [\"energy\"]\n");
    /* where monitors() puts t, the state and p in the value vector, and
     * finds the velocities */
    for (uint32_t k = 0; k < nv; k++)
        names[k] = expr_var_name(g, k);
    py_names(&b, "_VALUE_NAMES", names, nv);
    strbuf_add(&b, "_STATE_AT = [");
    for (size_t k = 0; k < ns; k++)
        strbuf_addf(&b, "%s%u", k ? ", " : "", sv[k]);
    strbuf_add(&b, "]\n_PARAM_AT = [");
    for (size_t k = 0; k < sys->np + sys->ni; k++)
        strbuf_addf(&b, "%s%u", k ? ", " : "",
                    k < sys->np ? sys->p[k] : sys->in[k - sys->np]);
    strbuf_add(&b, "]\n_QD_AT = [");
    for (size_t k = 0; k < sys->n; k++)
        strbuf_addf(&b, "%s%u", k ? ", " : "", sys->qd[k]);
    strbuf_addf(&b, "]\n_T_AT = %u\n_NMON = %zu\n\n", sys->t,
                eom_monitor_count(e));
    /* rhs's entry without arguments, on buffers of the C's own */
    strbuf_t glue;
    strbuf_init(&glue);
    strbuf_addf(&glue,
                "\n/* For the Python module (export python): rhs's arguments "
                "and result in\n"
                " * buffers, so that the call from ctypes has none. */\n"
                "double %s_py_t;\n"
                "double %s_py_y[%zu], %s_py_p[%zu], %s_py_dydt[%zu];\n\n"
                "int %s_py_rhs(void)\n"
                "{\n"
                "    return %s_rhs_status(%s_py_t, %s_py_y, %s_py_p, "
                "%s_py_dydt);\n"
                "}\n\n"
                "/* N evaluations of the same, from C: what rhs costs "
                "without Python\n"
                " * (nh's bench times the two side by side). */\n"
                "int %s_py_rhs_repeat(long n)\n"
                "{\n"
                "    int rc = 0;\n"
                "    long k;\n"
                "    for (k = 0; k < n; k++)\n"
                "        rc |= %s_py_rhs();\n"
                "    return rc;\n"
                "}\n",
                name, name, ns ? ns : 1, name,
                sys->np + sys->ni ? sys->np + sys->ni : 1, name,
                ns ? ns : 1, name, name, name, name, name, name, name, name);
    char *full = xmalloc(strlen(text) + glue.len + 1);
    strcpy(full, text);
    strcat(full, glue.data);
    strbuf_free(&glue);
    py_c_source(&b, full);
    free(full);
    strbuf_addf(&b, py_body, name, name, name, name, name, name, name,
                name, name, name);
    free(names);
    free(text);
    free(params);

    outfile_t of = {0};
    int rc = outfile_open(&of, path);
    if (rc) {
        strbuf_free(&b);
        return diag_error(err, pspan, "cannot write '%s': %s", path,
                          strerror(rc));
    }
    fputs(b.data, of.f);
    strbuf_free(&b);
    rc = outfile_commit(&of);
    if (rc)
        return diag_error(err, pspan, "cannot write '%s': %s", path,
                          strerror(rc));
    if (!s->quiet)
        fprintf(s->out,
                "wrote %s: module %s (rhs, jacobian, monitors), equations "
                "%s, %zu state values, %zu parameters, %zu inputs\n",
                path, name, eom_method_name(eom_method(e)), ns, sys->np,
                sys->ni);
    return 0;
}
