"""Run each test case of a unittest module in a forked child, so a case that
kills its process (a crafted file that crashes the library) is counted as a
crash instead of ending the run.

usage: forked_cases.py TESTS_DIR MODULE

Prints one line per case, `PASS|FAIL|SKIP|CRASH <Class>::<method>`, then
`N passed, N failed, N skipped, N crashed`. A case still running after 60 s
is killed and counted as a crash.
"""

import os
import signal
import sys
import unittest


def run_case(case, w):
    """In the child: run one case, write its outcome to fd `w`, exit."""
    signal.alarm(60)
    result = unittest.TestResult()
    case.run(result)
    if result.errors or result.failures:
        outcome = 'FAIL'
        detail = (result.errors + result.failures)[0][1].strip().splitlines()[-1]
    elif result.skipped:
        outcome, detail = 'SKIP', result.skipped[0][1]
    else:
        outcome, detail = 'PASS', ''
    os.write(w, ('%s %s' % (outcome, detail)).encode())
    os._exit(0)


def cases(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from cases(t)
        else:
            yield t


def main():
    tests_dir, module = sys.argv[1], sys.argv[2]
    sys.path.insert(0, tests_dir)
    suite = unittest.defaultTestLoader.loadTestsFromName(module)
    counts = dict(PASS=0, FAIL=0, SKIP=0, CRASH=0)
    for case in cases(suite):
        name = '%s::%s' % (type(case).__name__, case._testMethodName)
        sys.stdout.flush()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            run_case(case, w)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        report = b''.join(chunks).decode(errors='replace')
        if os.WIFSIGNALED(status) or not report:
            outcome = 'CRASH'
            detail = ('signal %d' % os.WTERMSIG(status)
                      if os.WIFSIGNALED(status) else 'exit %d' % os.WEXITSTATUS(status))
        else:
            outcome, _, detail = report.partition(' ')
        counts[outcome] += 1
        print('%s %s %s' % (outcome, name, detail), flush=True)
    print('%d passed, %d failed, %d skipped, %d crashed'
          % (counts['PASS'], counts['FAIL'], counts['SKIP'], counts['CRASH']))


if __name__ == '__main__':
    main()
