"""Reads a verbose log into records: one per executed call HCOps or oneDNN
printed, with what it was (part, name, shape), where it ran (impl) and its
time. The line formats are those of the libraries' own printers:

  GEMM (shim/common/verbose.h, gemm_call.cpp, shim/dnnl/gemm.cpp, and the
  dispatcher's shim/torch/gemm.cpp, routine aten::mm etc., with "batches=N"
  and "dtype=bf16" in its details):
    hcops_verbose,exec,<routine>,<transa>,<transb>,<m>,<n>,<k>,<alpha>,<lda>,<ldb>,<beta>,<ldc>,
                       <threads>,<ms>,<gflops>,hcops:<family>,<details>
  operators (shim/torch/report.h):
    hcops_verbose,exec,<op>,<dtype>,<shape>,<threads>,<ms>,hcops:<family>,<details>
    hcops_verbose,fallback,<op>,<dtype>,<shape>,<reason>
  oneDNN primitives HCOps left to libdnnl (shim/dnnl/report.h), kept as
  (dnnl:<kind>, -, <when>, <reason>) beside the operators' fallbacks:
    hcops_verbose,fallback,dnnl,<kind>,create|execute,<reason>
  oneDNN primitives HCOps ran (shim/dnnl/report.h), and oneDNN's own (2.x; 3.x
  adds a "primitive" marker, and a timestamp with ONEDNN_VERBOSE_TIMESTAMP=1,
  after "onednn_verbose"):
    hcops_verbose,exec,cpu,<kind>,hcops:<family>,<prop>,<mds>,<attrs>,<aux>,<problem>,<ms>
    onednn_verbose,exec,cpu,<kind>,<impl>,<prop>,<mds>,<attrs>,<aux>,<problem>,<ms>
  MPI (src/mpi/op_log.h):
    hcops_verbose,mpi,<rank>,<call>,<ranks>,<count>,<type>,<op>,<bytes>,<in_flight_ms>,<exposed_ms>

info, legend, summary and total lines (and oneDNN's info and create lines)
are recognised and not counted: the summaries repeat what the exec lines say.
Any other line is the program's own output and is skipped. Open MPI's
--tag-output prefix "[job,rank]<stdxxx>:" is understood; the rank is kept.
"""
import re
from dataclasses import dataclass, field

from . import cost

TAG = re.compile(r"^\[\d+,(\d+)\]<std(?:out|err)>:")
GEMM_ROUTINE = re.compile(r"^((cblas_)?[sdchz]?[a-z0-9_]*gemm[a-z0-9_]*|aten::(mm|addmm|bmm|baddbmm))$")
DETAIL = re.compile(r"\b(batches|dtype)=([a-z0-9]+)")
TRANSPOSES = {"N", "T", "C", "n", "t", "c"}
# The attention operators' keys (their verbose details: "S=<keys>"); cost.py
# counts their flops.
ATTENTION_KEYS = re.compile(r"\bS=(\d+)")


class LogError(Exception):
    """A line that claims to be a verbose line and is malformed: (line number, what)."""

    def __init__(self, lineno, what):
        super().__init__(what)
        self.lineno = lineno
        self.what = what


@dataclass
class Record:
    part: str          # gemm, operator, dnnl, mpi
    name: str          # routine, operator, primitive kind, MPI call
    shape: str         # what tells calls of one name apart
    dtype: str
    impl: str          # hcops:<family>, or oneDNN's implementation
    ms: float
    threads: int = 0
    rank: int = -1
    dims: dict = field(default_factory=dict)  # what cost.py needs
    lineno: int = 0
    raw: str = ""      # the fields a replay needs (GEMM call, oneDNN primitive)


@dataclass
class Log:
    records: list = field(default_factory=list)
    fallbacks: dict = field(default_factory=dict)   # (op, dtype, shape, reason) -> calls
    fallback_lines: list = field(default_factory=list)  # (line number, key), for steps.skip
    skipped: int = 0            # lines that are not verbose lines
    recognised: int = 0         # info, legend, summary, total, create lines
    lines: int = 0
    truncated: int = 0          # line number of a truncated last line, or 0
    sources: set = field(default_factory=set)       # "hcops", "onednn"


def _number(text, lineno, what, kind=float):
    try:
        return kind(text)
    except ValueError:
        raise LogError(lineno, f"{what} is not a number: {text!r}") from None


def _time(text, lineno, what="ms"):
    v = _number(text, lineno, what)
    if not 0 <= v < float("inf"):
        raise LogError(lineno, f"{what} is not a time: {text!r}")
    return v


def _gemm(f, lineno):
    # f[0] = routine ... f[15] = details
    if len(f) < 16:
        raise LogError(lineno, f"GEMM line with {len(f)} fields after exec, 16 expected")
    routine, ta, tb = f[0], f[1], f[2]
    m, n, k = (_number(x, lineno, name, int) for x, name in zip(f[3:6], "mnk"))
    lda, ldb, ldc = (_number(f[i], lineno, name, int) for i, name in ((7, "lda"), (8, "ldb"), (10, "ldc")))
    _number(f[6], lineno, "alpha"), _number(f[9], lineno, "beta")
    threads = _number(f[11], lineno, "threads", int)
    ms = _time(f[12], lineno)
    dtype = {"s": "f32", "d": "f64"}.get(routine.removeprefix("cblas_").removeprefix("dnnl_")[:1], "")
    if "bf16" in routine or "bgemm" in routine:  # dnnl_gemm_bf16bf16f32, sbgemm_, cblas_sbgemm
        dtype = "bf16"
    shape, batches = f"{ta}{tb} {m}x{n}x{k}", 1
    if routine.startswith("aten::"):  # the dispatcher's: the details say the rest
        details = dict(DETAIL.findall(",".join(f[15:])))
        dtype = details.get("dtype", "f32")
        batches = _number(details.get("batches", "1"), lineno, "batches", int)
        if batches != 1:
            shape = f"{batches}x {shape}"
    # A bmm's products are one call: its flops those of (batches x m) x n x k,
    # and a replay (--project) runs it as that one GEMM (lda and ldc at
    # least that tall).
    mb = m * batches
    if batches != 1:
        lda, ldc = max(lda, mb if ta in "Nn" else lda), max(ldc, mb)
    return Record("gemm", routine, shape, dtype or "f32", f[14], ms, threads,
                  dims={"m": mb, "n": n, "k": k}, lineno=lineno,
                  raw=",".join([ta, tb, str(mb), str(n), str(k), f[6], str(lda), str(ldb), f[9], str(ldc)]))


def _operator(f, lineno):
    # op, dtype, shape, threads, ms, impl, details
    if len(f) < 7:
        raise LogError(lineno, f"operator line with {len(f)} fields after exec, 7 expected")
    threads = _number(f[3], lineno, "threads", int)
    ms = _time(f[4], lineno)
    dims, shape = {"shape": f[2]}, f[2]
    if f[0] in cost.ATTENTION_FLOPS:
        # Attention's shape is B x H x L x E (queries); its keys S are in
        # the details. Keys other than the queries' count are part of the
        # shape (calls of other S are other rows).
        m = ATTENTION_KEYS.search(",".join(f[6:]))
        if m:
            dims["keys"] = int(m.group(1))
            lengths = cost.ints(f[2])
            if len(lengths) == 4 and lengths[2] != dims["keys"]:
                shape = f"{f[2]} S={m.group(1)}"
    return Record("operator", f[0], shape, f[1], f[5], ms, threads, dims=dims, lineno=lineno)


def _dnnl(f, lineno, impl_field_is_hcops):
    # cpu, kind, impl, prop, mds, attrs, aux, problem, ms
    if len(f) < 9:
        raise LogError(lineno, f"oneDNN exec line with {len(f)} fields after exec, 9 expected")
    kind, impl, prop, mds, attrs, aux, problem = f[1], f[2], f[3], f[4], f[5], f[6], f[7]
    ms = _time(f[8], lineno)
    # "src_bf16::blocked:ab:f0", "diff_dst_f32::...": the datatype ends the name
    dtypes = sorted({m.split("::")[0].rsplit("_", 1)[1] for m in mds.split() if "_" in m.split("::")[0]})
    return Record("dnnl", kind, problem, "/".join(dtypes), impl, ms, dims={"problem": problem, "mds": mds},
                  lineno=lineno, raw=",".join([kind, prop, mds, attrs, aux, problem]))


def _mpi(f, lineno):
    # rank, call, ranks, count, type, op, bytes, in_flight_ms, exposed_ms
    if len(f) < 9:
        raise LogError(lineno, f"MPI line with {len(f)} fields, 9 expected")
    rank = _number(f[0], lineno, "rank", int)
    nbytes = _number(f[6], lineno, "bytes", int)
    # "-": an operation of another library (the torch.distributed backend),
    # whose wait libhcops_mpi does not see: no exposed time of its own.
    exposed = 0.0 if f[8] == "-" else _time(f[8], lineno, "exposed_ms")
    _time(f[7], lineno, "in_flight_ms")
    return Record("mpi", f[1], f"{f[2]} ranks {nbytes} B {f[4]} {f[5]}", f[4], "hcops:mpi", exposed, rank=rank,
                  dims={"bytes": nbytes, "ranks": int(f[2]) if f[2].isdigit() else 0, "in_flight_ms": float(f[7]),
                        "exposed_known": f[8] != "-"},
                  lineno=lineno)


def parse_line(line, lineno, log):
    """Adds what line holds to log; raises LogError for a malformed verbose line."""
    rank = -1
    m = TAG.match(line)
    if m:
        rank = int(m.group(1))
        line = line[m.end():]
    line = line.rstrip("\r\n")
    if line.startswith("hcops_verbose,"):
        source = "hcops"
    elif line.startswith("onednn_verbose,") or line.startswith("dnnl_verbose,"):
        source = "onednn"
    else:
        log.skipped += 1
        return
    f = line.split(",")
    if source == "onednn":
        # oneDNN 3.x: "onednn_verbose[,<timestamp>],primitive,exec,...": the
        # timestamp (ONEDNN_VERBOSE_TIMESTAMP=1) and the component marker go.
        if len(f) > 2 and re.fullmatch(r"[0-9.]+", f[1]):
            f = [f[0]] + f[2:]
        if len(f) > 2 and f[1] in ("primitive", "graph", "common"):
            f = [f[0]] + f[2:]
    what = f[1] if len(f) > 1 else ""
    log.sources.add(source)
    if source == "onednn":
        if what != "exec":
            log.recognised += 1  # info, create:*, and so on
            return
        rec = _dnnl(f[2:], lineno, False)
    elif what == "exec":
        body = f[2:]
        if body and body[0] == "cpu":
            rec = _dnnl(body, lineno, True)
        elif len(body) >= 16 and GEMM_ROUTINE.match(body[0]) and body[1] in TRANSPOSES:
            rec = _gemm(body, lineno)
        elif len(body) >= 7 and body[5].startswith("hcops:"):
            rec = _operator(body, lineno)
        else:
            raise LogError(lineno, "an hcops_verbose exec line of no known format")
    elif what == "fallback":
        if len(f) < 6:
            raise LogError(lineno, f"fallback line with {len(f) - 2} fields, 4 expected")
        if f[2] == "dnnl":  # a primitive left to libdnnl: kind, when, reason
            key = ("dnnl:" + f[3], "-", f[4], ",".join(f[5:]))
        else:
            key = (f[2], f[3], f[4], ",".join(f[5:]))
        log.fallbacks[key] = log.fallbacks.get(key, 0) + 1
        log.fallback_lines.append((lineno, key))
        return
    elif what == "mpi":
        rec = _mpi(f[2:], lineno)
    elif what in ("info", "legend", "mpi_legend", "summary", "total"):
        log.recognised += 1
        return
    else:
        raise LogError(lineno, f"unknown hcops_verbose line kind {what!r}")
    if rec.rank < 0:
        rec.rank = rank
    log.records.append(rec)


def parse(stream, progress=None):
    """The Log of stream's lines. A last line without its newline that does
    not parse is a truncated log's: it is left out (log.truncated says
    where), not an error. progress(lines) is called every 100000 lines."""
    log = Log()
    pending = None
    for lineno, line in enumerate(stream, 1):
        log.lines = lineno
        if progress and lineno % 100000 == 0:
            progress(lineno)
        if not line.endswith("\n"):
            pending = (lineno, line)
            break
        parse_line(line, lineno, log)
    if pending:
        lineno, line = pending
        try:
            parse_line(line, lineno, log)
        except LogError:
            log.truncated = lineno
    return log
