"""The oracle scripts' last line and exit status (tests/tf_oracle/*.py)."""
import sys


def conclude(what, total, failed, within):
    """Prints "tf_oracle WHAT: K of TOTAL WITHIN[; differ: ...]" and exits 1
    when anything in `failed` (names) differed, else 0."""
    print("tf_oracle %s: %d of %d %s%s" % (
        what, total - len(failed), total, within,
        "; differ: " + ", ".join(failed) if failed else ""), flush=True)
    sys.exit(1 if failed else 0)
