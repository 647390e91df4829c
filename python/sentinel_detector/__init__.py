"""SentinelNet's detector and Algorithm 1 inside Python agents (docs/agents.md "Python").

ctypes over the installed C library libsentinel_detector (export/detector.h, context/context.h,
defense/defense.h): no compiler, no dependency beyond the standard library.

    from sentinel_detector import Detector, Sentinel, task_text
    det = Detector("detector.gguf", threads=1)
    det.score("Question: 2+2?", "It is 4.")                  # R(response + context)
    det.score_many("Question: 2+2?", ["4", "5"])             # one context, several responses
    s = Sentinel(agent=0, task=task_text("2+2?"), k=1)       # Algorithm 1 for agent 0
    r = s.round(det, 0, [(1, "It is 5. FINAL ANSWER: 5"), (2, "4.")])
    r.scores, r.excluded, s.blacklist

The library is found through $SENTINEL_DETECTOR_LIB (a path), else the loader's search path
(LD_LIBRARY_PATH, /etc/ld.so.conf) as libsentinel_detector.so.0, else ctypes.util.find_library.
Errors raise SentinelError with the library's message. A Detector is used by one thread at a
time (open one per thread); a Sentinel likewise.
"""
import ctypes
import ctypes.util
import os

from .client import ServeClient, ServeError  # noqa: F401

__all__ = ["Detector", "Sentinel", "RoundResult", "SentinelError", "task_text",
           "history_entry", "extract_answer", "tie_seed", "ServeClient", "ServeError",
           "library_path"]


class SentinelError(Exception):
    """A failure reported by the C library: .code (enum sn_status) and its one-line message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class _Buf(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t),
                ("max", ctypes.c_size_t)]


class _DetParams(ctypes.Structure):
    # struct sn_detector_params of export/detector.h, field for field
    _fields_ = [("n_threads", ctypes.c_int), ("max_tokens", ctypes.c_int),
                ("max_batch", ctypes.c_int), ("kernels", ctypes.c_char_p)]


class _SentParams(ctypes.Structure):
    _fields_ = [("self", ctypes.c_int), ("k", ctypes.c_int), ("rule", ctypes.c_int),
                ("tie_seed", ctypes.c_uint64), ("history_sentences", ctypes.c_size_t),
                ("history_chars", ctypes.c_size_t)]


class _Msg(ctypes.Structure):
    _fields_ = [("agent", ctypes.c_int), ("text", ctypes.c_char_p), ("answer", ctypes.c_char_p)]


class _CtxParams(ctypes.Structure):
    _fields_ = [("history_sentences", ctypes.c_size_t), ("history_chars", ctypes.c_size_t)]


_STRS = ctypes.POINTER(ctypes.c_char_p)
_FLOATS = ctypes.POINTER(ctypes.c_float)
_ERR = ctypes.POINTER(_Err)
_SCORE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, _STRS,
                             ctypes.c_size_t, _STRS, ctypes.c_size_t, _FLOATS, _ERR)


class _Scorer(ctypes.Structure):
    _fields_ = [("score", _SCORE_FN), ("ctx", ctypes.c_void_p)]


_lib = None
_lib_path = None


def library_path():
    """The path of the C library in use (loading it if needed)."""
    _load()
    return _lib_path


def _load():
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    names = []
    if os.environ.get("SENTINEL_DETECTOR_LIB"):
        names.append(os.environ["SENTINEL_DETECTOR_LIB"])
    names.append("libsentinel_detector.so.0")
    found = ctypes.util.find_library("sentinel_detector")
    if found:
        names.append(found)
    lib = None
    for n in names:
        try:
            lib = ctypes.CDLL(n)
            _lib_path = n
            break
        except OSError as e:
            tried.append("%s (%s)" % (n, e))
    if lib is None:
        raise SentinelError(2, "libsentinel_detector not found; install it (`make install "
                            "PREFIX=...`, docs/export.md) and set LD_LIBRARY_PATH or "
                            "SENTINEL_DETECTOR_LIB. Tried: " + "; ".join(tried))
    sig = {
        "sn_detector_default_params": (_DetParams, []),
        "sn_detector_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_DetParams),
                                            ctypes.POINTER(ctypes.c_void_p), _ERR]),
        "sn_detector_free": (None, [ctypes.c_void_p]),
        "sn_detector_score": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                             _FLOATS, _ERR]),
        "sn_detector_score_batch": (ctypes.c_int, [ctypes.c_void_p, _STRS, _STRS,
                                                   ctypes.c_size_t, _FLOATS, _ERR]),
        "sn_detector_score_shared": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _STRS,
                                                    ctypes.c_size_t, _FLOATS, _ERR]),
        "sn_detector_score_prompt": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _STRS,
                                                    ctypes.c_size_t, _STRS, ctypes.c_size_t,
                                                    _FLOATS, _ERR]),
        "sn_detector_n_threads": (ctypes.c_int, [ctypes.c_void_p]),
        "sn_sentinel_default_params": (_SentParams, []),
        "sn_sentinel_create": (ctypes.c_int, [ctypes.POINTER(_SentParams), ctypes.c_char_p,
                                              ctypes.POINTER(ctypes.c_void_p), _ERR]),
        "sn_sentinel_free": (None, [ctypes.c_void_p]),
        "sn_sentinel_add_history": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                   ctypes.POINTER(_Msg), _ERR]),
        "sn_sentinel_round": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_Scorer),
                                             ctypes.c_int, ctypes.POINTER(_Msg),
                                             ctypes.c_size_t, _FLOATS,
                                             ctypes.POINTER(ctypes.c_bool),
                                             ctypes.POINTER(ctypes.c_uint64), _ERR]),
        "sn_sentinel_blacklist": (ctypes.c_uint64, [ctypes.c_void_p]),
        "sn_sentinel_context": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_Buf), _ERR]),
        "sn_context_task_text": (ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, _STRS,
                                                ctypes.c_size_t, ctypes.POINTER(_Buf), _ERR]),
        "sn_context_history_entry": (ctypes.c_int, [ctypes.c_size_t, ctypes.c_int,
                                                    ctypes.c_char_p, ctypes.c_char_p,
                                                    ctypes.POINTER(_CtxParams),
                                                    ctypes.POINTER(_Buf), _ERR]),
        "sn_buf_free": (None, [ctypes.POINTER(_Buf)]),
        "sn_seed_derive": (ctypes.c_uint64, [ctypes.c_uint64, ctypes.c_char_p,
                                             ctypes.c_uint64]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    # answer extraction ships with context/ (optional in older libraries)
    if hasattr(lib, "sn_extract_answer"):
        lib.sn_extract_answer.restype = ctypes.c_bool
        lib.sn_extract_answer.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t,
                                          ctypes.c_char_p]
    _lib = lib
    return lib


def _b(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")


def _strs(items):
    enc = [_b(x) for x in items]
    arr = (ctypes.c_char_p * (len(enc) + 1))(*enc)
    return arr, enc


def _check(rc, err):
    if rc:
        raise SentinelError(err.code, err.msg.decode("utf-8", "replace"))


def _take_buf(buf):
    lib = _load()
    try:
        return ctypes.string_at(buf.data, buf.len).decode("utf-8") if buf.data else ""
    finally:
        lib.sn_buf_free(ctypes.byref(buf))


class Detector:
    """A runtime detector (a GGUF written by `sentinel export`): R(response + context).

    threads: OpenBLAS threads (0 = OpenBLAS's default rule from the environment); the same
    GGUF, input and threads give the same bits as the C library and `sentinel score`.
    kernels: as `sentinel score --kernels` (docs/export.md "Weight formats and kernels");
    None = the SENTINEL_KERNELS environment variable, else "auto"."""

    def __init__(self, path, threads=1, max_tokens=0, kernels=None):
        lib = _load()
        p = lib.sn_detector_default_params()
        p.n_threads = int(threads)
        p.max_tokens = int(max_tokens)
        p.kernels = _b(kernels) if kernels else None  # None: SENTINEL_KERNELS, else "auto"
        h = ctypes.c_void_p()
        err = _Err()
        _check(lib.sn_detector_open(_b(os.fspath(path)), ctypes.byref(p), ctypes.byref(h),
                                    ctypes.byref(err)), err)
        self._h = h
        self.path = os.fspath(path)

    def close(self):
        if getattr(self, "_h", None):
            _load().sn_detector_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if not self._h:
            raise SentinelError(1, "detector is closed")
        return self._h

    @property
    def threads(self):
        return _load().sn_detector_n_threads(self._handle())

    def score(self, context, response):
        """The reward of one response to a context (higher = more trustworthy)."""
        out = ctypes.c_float()
        err = _Err()
        _check(_load().sn_detector_score(self._handle(), _b(context), _b(response),
                                         ctypes.byref(out), ctypes.byref(err)), err)
        return out.value

    def score_many(self, context, responses):
        """Rewards of several responses to one context (its tokens computed once)."""
        arr, keep = _strs(responses)
        out = (ctypes.c_float * max(1, len(keep)))()
        err = _Err()
        _check(_load().sn_detector_score_shared(self._handle(), _b(context), arr, len(keep),
                                                out, ctypes.byref(err)), err)
        return [out[i] for i in range(len(keep))]

    def score_pairs(self, contexts, responses):
        """Rewards of (context, response) pairs, one by one."""
        if len(contexts) != len(responses):
            raise SentinelError(1, "score_pairs: %d contexts, %d responses" %
                                (len(contexts), len(responses)))
        ca, k1 = _strs(contexts)
        ra, k2 = _strs(responses)
        out = (ctypes.c_float * max(1, len(k1)))()
        err = _Err()
        _check(_load().sn_detector_score_batch(self._handle(), ca, ra, len(k1), out,
                                               ctypes.byref(err)), err)
        return [out[i] for i in range(len(k1))]

    def score_prompt(self, task, history, responses):
        """Rewards of responses to a context given as its parts: the task text and the history
        entries, oldest first (too long: the oldest entries are dropped, as in training)."""
        ha, k1 = _strs(history)
        ra, k2 = _strs(responses)
        out = (ctypes.c_float * max(1, len(k2)))()
        err = _Err()
        _check(_load().sn_detector_score_prompt(self._handle(), _b(task), ha, len(k1), ra,
                                                len(k2), out, ctypes.byref(err)), err)
        return [out[i] for i in range(len(k2))]


class RoundResult:
    """One round of Algorithm 1 for one sentinel: per received message its sender, score and
    whether the sender is now excluded; `added` = B_t, the bottom k of this round."""

    def __init__(self, agents, scores, excluded, added):
        self.agents = agents
        self.scores = scores
        self.excluded = excluded
        self.added = added

    def __repr__(self):
        return "RoundResult(agents=%r, scores=%r, excluded=%r, added=%r)" % (
            self.agents, self.scores, self.excluded, self.added)


def _mask(bits):
    return [j for j in range(64) if (bits >> j) & 1]


def _messages(messages):
    """(agent, text[, answer]) tuples or {"agent", "text", "answer"} dicts -> _Msg array."""
    rows = []
    for m in messages:
        if isinstance(m, dict):
            rows.append((int(m["agent"]), m["text"], m.get("answer")))
        elif len(m) == 2:
            rows.append((int(m[0]), m[1], None))
        else:
            rows.append((int(m[0]), m[1], m[2]))
    keep = [(_b(t), _b(a)) for _, t, a in rows]
    arr = (_Msg * max(1, len(rows)))()
    for i, (agent, _, _) in enumerate(rows):
        arr[i] = _Msg(agent, keep[i][0], keep[i][1])
    return arr, rows, keep


class Sentinel:
    """Algorithm 1 for one agent (defense/defense.h): k, the rule ("all", the paper's, or
    "unlisted"), the debate's tie seed, the task, the history and the cumulative blacklist.
    Each round: round() with the messages received (not the agent's own), then add_history()
    for every message of the round, the agent's own included, in the debate's order."""

    _RULES = {"all": 0, "unlisted": 1}

    def __init__(self, agent, task, k=1, rule="all", tie_seed=0, history_sentences=0,
                 history_chars=0):
        lib = _load()
        if rule not in self._RULES:
            raise SentinelError(1, "rule %r: expected 'all' or 'unlisted'" % (rule,))
        p = lib.sn_sentinel_default_params()
        p.self = int(agent)
        p.k = int(k)
        p.rule = self._RULES[rule]
        p.tie_seed = int(tie_seed) & 0xFFFFFFFFFFFFFFFF
        p.history_sentences = int(history_sentences)
        p.history_chars = int(history_chars)
        h = ctypes.c_void_p()
        err = _Err()
        _check(lib.sn_sentinel_create(ctypes.byref(p), _b(task), ctypes.byref(h),
                                      ctypes.byref(err)), err)
        self._h = h
        self.agent = int(agent)

    def close(self):
        if getattr(self, "_h", None):
            _load().sn_sentinel_free(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def add_history(self, round, agent, text, answer=None):
        m = _Msg(int(agent), _b(text), _b(answer))
        err = _Err()
        _check(_load().sn_sentinel_add_history(self._h, int(round), ctypes.byref(m),
                                               ctypes.byref(err)), err)

    def round(self, scorer, round, messages):
        """Scores the received messages with scorer (a Detector, or a function
        f(task, history, responses) -> list of floats), updates the blacklist."""
        arr, rows, keep = _messages(messages)
        n = len(rows)
        out = (ctypes.c_float * max(1, n))()
        ex = (ctypes.c_bool * max(1, n))()
        added = ctypes.c_uint64()
        err = _Err()
        failure = []

        def call(ctx, task, hist, n_hist, resp, n_resp, scores, e):
            try:
                if isinstance(scorer, Detector):
                    return _load().sn_detector_score_prompt(scorer._handle(), task, hist,
                                                            n_hist, resp, n_resp, scores, e)
                got = scorer(task.decode("utf-8"),
                             [hist[i].decode("utf-8") for i in range(n_hist)],
                             [resp[i].decode("utf-8") for i in range(n_resp)])
                for i in range(n_resp):
                    scores[i] = float(got[i])
                return 0
            except Exception as x:  # never across the C boundary
                failure.append(x)
                return 6  # SN_E_BACKEND

        sc = _Scorer(_SCORE_FN(call), None)
        rc = _load().sn_sentinel_round(self._h, ctypes.byref(sc), int(round), arr, n, out, ex,
                                       ctypes.byref(added), ctypes.byref(err))
        if failure:
            raise failure[0]
        _check(rc, err)
        return RoundResult([r[0] for r in rows], [out[i] for i in range(n)],
                           [bool(ex[i]) for i in range(n)], _mask(added.value))

    @property
    def blacklist(self):
        return _mask(_load().sn_sentinel_blacklist(self._h))

    def excludes(self, agent):
        return agent in self.blacklist

    def context(self):
        """The context the next round is scored on (task and history)."""
        buf = _Buf()
        err = _Err()
        _check(_load().sn_sentinel_context(self._h, ctypes.byref(buf), ctypes.byref(err)), err)
        return _take_buf(buf)


def task_text(question, options=None):
    """The task as training rendered it: "Question: <q>" and, with options, "\\nOptions:\\nA. ..."."""
    opts = list(options or [])
    arr, keep = _strs(opts)
    buf = _Buf()
    err = _Err()
    _check(_load().sn_context_task_text(0 if opts else 1, _b(question), arr, len(keep),
                                        ctypes.byref(buf), ctypes.byref(err)), err)
    return _take_buf(buf)


def history_entry(round, agent, text, answer=None, sentences=0, chars=0):
    """One history entry, "Round <round+1>, agent <agent> (answer <X|none>): <gist>"."""
    p = _CtxParams(int(sentences) or 2, int(chars) or 300)
    buf = _Buf()
    err = _Err()
    _check(_load().sn_context_history_entry(int(round), int(agent), _b(answer), _b(text),
                                            ctypes.byref(p), ctypes.byref(buf),
                                            ctypes.byref(err)), err)
    return _take_buf(buf)


def extract_answer(text, n_options=0):
    """The final answer in normal form ("B", "3", "-0.5"), or None: multiple choice with
    n_options options, numeric when n_options is 0."""
    lib = _load()
    if not hasattr(lib, "sn_extract_answer"):
        raise SentinelError(5, "this libsentinel_detector has no answer extraction")
    out = ctypes.create_string_buffer(32)
    ok = lib.sn_extract_answer(_b(text), 0 if n_options else 1, int(n_options), out)
    return out.value.decode("utf-8") if ok else None


def tie_seed(seed, debate_id):
    """The tie seed `sentinel eval --seed SEED` gives debate `debate_id`."""
    return _load().sn_seed_derive(int(seed) & 0xFFFFFFFFFFFFFFFF, _b(debate_id), 0)
