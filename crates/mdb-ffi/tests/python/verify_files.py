"""Keep a copy of every data file py-lmdb's verifier tests hand to its
verifier (lmdb/verify.py), so that `mdb check` can judge the same files.

usage: verify_files.py TESTS_DIR OUT_DIR

Runs tests/verify_test.py (each test in-process; their own verdicts do not
matter here) with `lmdb.verify.verify` wrapped: each call first copies the
data file to OUT_DIR/<n>.mdb. Prints one line per copy,
`<n> <Class>::<method> <call index>`. The first call of a test that forges
a file is its check of the clean file: it answers "no errors", so that the
forgery is made whatever the verifier thinks of the clean file.
"""

import os
import shutil
import sys
import unittest


def main():
    tests_dir, out = sys.argv[1], sys.argv[2]
    sys.path.insert(0, tests_dir)
    import verify_test
    from lmdb import verify as V

    real = V.verify
    state = dict(test=None, calls={}, n=0)

    def verify(path, *args, **kwargs):
        name = state['test']
        i = state['calls'].get(name, 0)
        state['calls'][name] = i + 1
        data = path if os.path.isfile(path) else os.path.join(path, 'data.mdb')
        dest = os.path.join(out, '%d.mdb' % state['n'])
        shutil.copyfile(data, dest)
        print('%d %s %d' % (state['n'], name, i), flush=True)
        state['n'] += 1
        errors = real(path, *args, **kwargs)
        forges = name.startswith(('VerifyNegativeTest', 'VerifyReversedupTest'))
        return [] if forges and i == 0 else errors

    V.verify = verify
    suite = unittest.defaultTestLoader.loadTestsFromModule(verify_test)
    stack = [suite]
    while stack:
        t = stack.pop(0)
        if isinstance(t, unittest.TestSuite):
            stack.extend(t)
            continue
        state['test'] = '%s::%s' % (type(t).__name__, t._testMethodName)
        t.run(unittest.TestResult())


if __name__ == '__main__':
    main()
