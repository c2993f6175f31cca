"""Run MXNet 1.9.1's own Python unit tests against straightdope and count what passes.

    python scripts/mxnet_tests.py                       # every file of both sets
    python scripts/mxnet_tests.py test_attr test_viz    # some files
    python scripts/mxnet_tests.py --set wider -k grad   # pytest's -k within the set

MXNet's files are read from a git copy of apache/mxnet at tag 1.9.1 (``--mxnet``, default
``$MXNET_SRC`` or ``/work/.mirror/apache+mxnet/repo``, which the ``fetch`` tool makes); they are
never committed here. Each test file is copied with one change: its imports of ``mxnet`` import
``straightdope`` instead (``import mxnet as mx`` -> ``import straightdope as mx``). Nothing else
in a test is edited.

What the harness itself supplies, beside the library:
- ``straightdope.test_utils``: MXNet's own ``python/mxnet/test_utils.py`` (its checking tools,
  ``assert_almost_equal``, ``check_numeric_gradient``, ...), imports rewritten the same way; an
  import of an MXNet internal it cannot find leaves that name undefined, so only the tests using
  it fail.
- NumPy's removed aliases (``np.int``, ``np.bool``, ``np.NaN``, ...): MXNet 1.9.1 runs on
  NumPy < 1.24, and its tests use them; the harness puts them back (see ``CONFTEST``). Also
  ``scipy.stats.chisquare`` as older SciPy computed it (test_utils' random-generator checks).
- ``nose.tools``: the nose names MXNet's files import (nose does not run on Python 3.10+).
- MXNet's ``tests/python/unittest/common.py`` and ``tests/python/common/models.py``.
- internal MXNet modules imported at the top of a file (``INTERNAL_MODULES``), and
  ``ndarray.sparse`` (sparse storage is out of scope): stand-ins whose every name raises when
  used, so the file loads and only the tests that use them fail.

Scope: ``mxnet_tests_scope.py`` lists, per file, the tests left out and why (GPU, sparse storage,
multi-device/kvstore, Module/io/RecordIO, downloads, float16/multi-precision, DLPack/TVM, tests
MXNet itself skips or fails on CPU). Everything else collected is in scope. A test function counts
as passed when all its parametrized cases pass (each within ``--timeout`` seconds).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mxnet_tests_scope import OUT_OF_SCOPE  # noqa: E402

TAG = '1.9.1'
FIRST_SET = ['test_ndarray', 'test_symbol', 'test_autograd', 'test_gluon', 'test_gluon_data',
             'test_loss', 'test_metric', 'test_optimizer', 'test_init', 'test_gluon_trainer']
WIDER_SET = ['test_numpy_op', 'test_operator', 'test_higher_order_grad', 'test_contrib_autograd',
             'test_random', 'test_numpy_gluon', 'test_numpy_ndarray', 'test_attr', 'test_viz',
             'test_dynamic_shape', 'test_thread_local', 'test_gluon_utils', 'test_infer_shape',
             'test_infer_type', 'test_executor',
             # other helpers' areas (issue 32 sections 1-2); run with the set, counted apart
             'test_gluon_rnn', 'test_contrib_control_flow', 'test_exc_handling', 'test_engine',
             'test_gluon_save']
# MXNet internals some files import at module level, not library API, and out-of-scope
# modules (sparse storage) likewise imported at the top of a file (see the docstring).
INTERNAL_MODULES = ['numpy_op_signature', 'ndarray.sparse']
SUPPORT_FILES = ['tests/python/unittest/common.py', 'tests/python/common/models.py',
                 'tests/python/unittest/legacy_ndarray.v0', 'tests/python/unittest/save_000800.json']

IMPORT_RE = re.compile(r'^(\s*)(import|from)\s+mxnet\b')


def rewrite_imports(src):
    """``mxnet`` -> ``straightdope`` in import statements, nowhere else."""
    out = []
    for line in src.splitlines(keepends=True):
        m = IMPORT_RE.match(line)
        if m:
            indent, kw = m.groups()
            rest = line[m.end():]
            if kw == 'import' and not rest.startswith('.') and not rest.lstrip().startswith('as'):
                # bare `import mxnet`: keep the name the file uses
                line = f'{indent}import straightdope as mxnet{rest}'
            elif kw == 'import' and re.match(r'\.[\w.]+\s*(#.*)?$', rest):
                # `import mxnet.autograd` binds `mxnet` too: keep that name
                sub = rest.split('#')[0].strip()
                line = f'{indent}import straightdope{sub}; import straightdope as mxnet\n'
            else:
                line = f'{indent}{kw} straightdope{rest}'
        out.append(line)
    return ''.join(out)


TOLERANT_RE = re.compile(r'^from \.(\S*) import (.+)$')


def adapt_test_utils(src):
    """MXNet's test_utils: relative imports become tolerant imports from straightdope."""
    out = []
    for line in rewrite_imports(src).splitlines(keepends=True):
        m = TOLERANT_RE.match(line.rstrip('\n'))
        if m:
            mod = 'straightdope' + ('.' + m.group(1) if m.group(1) else '')
            out.append(f'try:\n    from {mod} import {m.group(2)}\n'
                       f'except ImportError:\n    pass  # missing here: tests using it fail\n')
        else:
            out.append(line)
    return ''.join(out)


NOSE_TOOLS = '''\
"""The nose.tools names MXNet's tests import, on top of pytest and unittest (harness)."""
import functools, unittest
import pytest
_tc = unittest.TestCase()
_tc.maxDiff = None
assert_raises = _tc.assertRaises
assert_equal = _tc.assertEqual
assert_true = _tc.assertTrue
assert_false = _tc.assertFalse
assert_almost_equal = _tc.assertAlmostEqual
ok_ = _tc.assertTrue
eq_ = _tc.assertEqual
SkipTest = unittest.SkipTest

def raises(*exceptions):
    def deco(f):
        @functools.wraps(f)
        def wrapper(*a, **k):
            with pytest.raises(exceptions):
                f(*a, **k)
        return wrapper
    return deco

def make_decorator(func):
    def deco(newfunc):
        return functools.wraps(func)(newfunc)
    return deco

def with_setup(setup=None, teardown=None):
    def deco(f):
        @functools.wraps(f)
        def wrapper(*a, **k):
            if setup: setup()
            try:
                return f(*a, **k)
            finally:
                if teardown: teardown()
        return wrapper
    return deco
'''

CONFTEST = '''\
"""Harness: MXNet's test_utils as straightdope.test_utils, stand-ins for MXNet internals."""
import ast, os, sys, types
import importlib.util
import straightdope
HERE = os.path.dirname(os.path.abspath(__file__))

# MXNet 1.9.1 needs NumPy < 1.24, and its tests (and test_utils) use names NumPy has since
# removed (np.int, np.bool, np.NaN, ...). They are the test environment's, not the library's:
# put them back, so that a test does not fail on NumPy's removals.
import numpy
for name, value in dict(int=int, bool=bool, float=float, complex=complex, object=object,
                        str=str, NaN=numpy.nan, Inf=numpy.inf, NINF=-numpy.inf,
                        infty=numpy.inf, float_=numpy.float64, complex_=numpy.complex128,
                        unicode_=numpy.str_, string_=numpy.bytes_, product=numpy.prod,
                        cumproduct=numpy.cumprod, alltrue=numpy.all, sometrue=numpy.any,
                        round_=numpy.round).items():
    if name not in numpy.__dict__:
        setattr(numpy, name, value)

mod = types.ModuleType('straightdope.test_utils')
mod.__file__ = os.path.join(HERE, '_mxnet_test_utils.py')
sys.modules['straightdope.test_utils'] = mod
straightdope.test_utils = mod
with open(mod.__file__) as f:
    tree = ast.parse(f.read())
# one top-level statement at a time: one that needs what is missing here (mx.io.DataIter
# as a base class) leaves its name undefined instead of failing every test
for node in tree.body:
    code = compile(ast.Module([node], []), mod.__file__, 'exec')
    try:
        exec(code, mod.__dict__)
    except Exception:
        pass


class _OldSciPyStats:
    """scipy.stats as MXNet's test_utils knew it: SciPy >= 1.9's chisquare refuses expected
    frequencies that do not sum to the observed ones, which chi_square_check's buckets
    (a part of the distribution) never do; older SciPy computed the statistic regardless."""
    def __getattr__(self, name):
        import scipy.stats
        return getattr(scipy.stats, name)

    @staticmethod
    def chisquare(f_obs, f_exp, ddof=0):
        import numpy, scipy.stats
        f_obs, f_exp = numpy.asarray(f_obs, float), numpy.asarray(f_exp, float)
        stat = ((f_obs - f_exp) ** 2 / f_exp).sum()
        return stat, scipy.stats.chi2.sf(stat, f_obs.size - 1 - ddof)


if getattr(mod, 'ss', None) is not None:
    mod.ss = _OldSciPyStats()


class _Internal(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        def missing(*a, **k):
            raise NotImplementedError(f'MXNet internal {self.__name__}.{name} (harness stand-in)')
        return missing


for name in %(internal)r:
    full = 'straightdope.' + name
    if importlib.util.find_spec(full) is None:
        sys.modules[full] = _Internal(full)
'''

# Part of the conftest: deselects the out-of-scope tests.
DESELECT = '''
OUT_OF_SCOPE = %(out_of_scope)r


def pytest_collection_modifyitems(config, items):
    # by exact test-function name: pytest's --deselect takes a prefix, so deselecting
    # test_parameter would also drop test_parameter_sharing
    out = [item for item in items
           if getattr(item, 'originalname', item.name) in OUT_OF_SCOPE.get(item.module.__name__, ())]
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = [item for item in items if item not in out]
'''


def git_show(src, path):
    return subprocess.run(['git', '--git-dir', src, 'show', f'{TAG}:{path}'], check=True,
                          capture_output=True).stdout


def prepare(src, work, files):
    """Write the rewritten test files and the harness into ``work``."""
    os.makedirs(os.path.join(work, 'nose'), exist_ok=True)
    with open(os.path.join(work, 'nose', '__init__.py'), 'w') as f:
        f.write('')
    with open(os.path.join(work, 'nose', 'tools.py'), 'w') as f:
        f.write(NOSE_TOOLS)
    with open(os.path.join(work, 'conftest.py'), 'w') as f:
        f.write(CONFTEST % {'internal': INTERNAL_MODULES})
        f.write(DESELECT % {'out_of_scope': {k: sorted(v) for k, v in OUT_OF_SCOPE.items()}})
    with open(os.path.join(work, '_mxnet_test_utils.py'), 'w') as f:
        f.write(adapt_test_utils(git_show(src, 'python/mxnet/test_utils.py').decode()))
    for path in SUPPORT_FILES:
        data = git_show(src, path)
        if path.endswith('.py'):
            data = rewrite_imports(data.decode()).encode()
        with open(os.path.join(work, os.path.basename(path)), 'wb') as f:
            f.write(data)
    for name in files:
        text = git_show(src, f'tests/python/unittest/{name}.py').decode()
        with open(os.path.join(work, f'{name}.py'), 'w') as f:
            f.write(rewrite_imports(text))


def test_functions(text):
    """Names of the module-level test functions in a test file's source."""
    return re.findall(r'^def (test_\w+)', text, flags=re.M)


def in_scope_tests(work, name):
    with open(os.path.join(work, f'{name}.py')) as f:
        names = test_functions(f.read())
    return [t for t in names if t not in OUT_OF_SCOPE.get(name, {})]


# The scope rule as patterns, for proposing entries of mxnet_tests_scope.py (``--propose``);
# the committed list is what counts, each entry read and kept or dropped by hand.
SCOPE_PATTERNS = [
    ('GPU', r'mx\.gpu\(|\bgpu\(\d|num_gpus\(\)|def test_\w*(gpu|cuda)'),
    ('sparse storage', r"'csr'|'row_sparse'|\bsparse\.|tostype\(|CSRNDArray|RowSparse|def test_\w*(sparse|_stype|csr)"),
    ('multi-device/kvstore', r'kvstore|kv\.create|cpu\(1\)|SyncBatchNorm|group2ctx'),
    ('legacy Module/io/RecordIO', r'mx\.mod\.|mx\.module|mx\.io\.|recordio|NDArrayIter'),
    ('downloads', r'download\(|pretrained=True|MNIST\(|CIFAR'),
    ('float16/multi-precision', r'multi_precision=True|bfloat16|def test_\w*(float16|fp16|amp_)'),
    ('DLPack/TVM', r'dlpack|tvm'),
    ('skipped in MXNet itself', r'@pytest\.mark\.skip\(|@unittest\.skip\('),
]


def test_sources(text):
    """{test function: its source with decorators} for a test file."""
    chunks = re.split(r'\n(?=@|def |class )', text)
    out, pending = {}, ''
    for chunk in chunks:
        if chunk.startswith('@'):
            pending += chunk + '\n'
            continue
        m = re.match(r'def (test_\w+)', chunk)
        if m:
            out[m.group(1)] = pending + chunk
        pending = ''
    return out


def helper_sources(text):
    """{module-level function that is not a test: its source}: a test that calls one
    uses what it uses (test_operator's RNN tests bind mx.mod.Module in
    check_rnn_consistency)."""
    return {m.group(1): chunk for chunk in re.split(r'\n(?=def |class |@)', text)
            for m in [re.match(r'def (\w+)', chunk)] if m and not m.group(1).startswith('test_')}


def scope_reason(body, helpers):
    """Why a test (its source) is out of scope, or None: a pattern in its own source,
    else in a helper it calls."""
    for reason, pat in SCOPE_PATTERNS:
        hit = re.search(pat, body)
        if hit:
            return f'{reason}: {hit.group(0)}'
    for helper, source in helpers.items():
        if re.search(rf'\b{helper}\(', body):
            for reason, pat in SCOPE_PATTERNS:
                hit = re.search(pat, source)
                if hit:
                    return f'{reason}: {hit.group(0)} (in {helper})'
    return None


def propose(src, name):
    text = rewrite_imports(git_show(src, f'tests/python/unittest/{name}.py').decode())
    helpers = helper_sources(text)
    print(f'    {name!r}: {{')
    for func, body in test_sources(text).items():
        reason = scope_reason(body, helpers)
        if reason:
            print(f'        {func!r}: {reason!r},')
    print('    },')


def run_file(work, name, timeout, extra):
    """Run one file in its own pytest process; return {test function: passed?} for in-scope tests."""
    xml = os.path.join(work, f'{name}.xml')
    # the out-of-scope tests are deselected by the conftest (OUT_OF_SCOPE)
    cmd = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
           f'--timeout={timeout}', f'--junitxml={xml}', f'{name}.py', *extra]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if not os.path.exists(xml):
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        return dict.fromkeys(in_scope_tests(work, name), False), proc
    seen = set()
    results = dict.fromkeys(in_scope_tests(work, name), False)  # not run: not passed
    for case in ET.parse(xml).getroot().iter('testcase'):
        func = case.get('name').split('[')[0]
        if func not in results:
            continue
        bad = any(child.tag in ('failure', 'error', 'skipped') for child in case)
        first = func not in seen
        seen.add(func)
        results[func] = (first or results[func]) and not bad
    if extra:  # -k: count only what ran
        results = {f: results[f] for f in seen}
    return results, proc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('files', nargs='*', help='test file names (default: the chosen set)')
    p.add_argument('--set', choices=['first', 'wider', 'all'], default='all')
    p.add_argument('--mxnet', default=os.environ.get('MXNET_SRC', '/work/.mirror/apache+mxnet/repo'),
                   help='git directory of apache/mxnet (bare or .git)')
    p.add_argument('--work', help='folder for the rewritten files (default: a new temp folder)')
    p.add_argument('--timeout', type=int, default=300, help='seconds per test case')
    p.add_argument('--failures', action='store_true', help='list the failing tests')
    p.add_argument('-k', help="pytest's -k expression")
    p.add_argument('--propose', action='store_true',
                   help='print scope-list entries the patterns suggest for the files, run nothing')
    args = p.parse_args(argv)
    files = args.files or {'first': FIRST_SET, 'wider': WIDER_SET,
                           'all': FIRST_SET + WIDER_SET}[args.set]
    if args.propose:
        for name in files:
            propose(args.mxnet, name)
        return
    work = args.work or tempfile.mkdtemp(prefix='mxnet_tests_')
    prepare(args.mxnet, work, files)
    extra = ['-k', args.k] if args.k else []
    total_pass = total = 0
    print(f'{"file":28} passed / in scope   (MXNet {TAG}, files in {work})')
    for name in files:
        results, proc = run_file(work, name, args.timeout, extra)
        passed = sum(1 for v in results.values() if v)
        total_pass += passed
        total += len(results)
        print(f'{name:28} {passed:4} / {len(results):<4}', flush=True)
        if args.failures:
            for func, ok in sorted(results.items()):
                if not ok:
                    print(f'    FAIL {func}')
    pct = 100.0 * total_pass / total if total else 0.0
    print(f'{"together":28} {total_pass:4} / {total:<4} ({pct:.1f}%)')


if __name__ == '__main__':
    main()
