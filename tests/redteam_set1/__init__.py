"""Red-team set 1: attempts at exercises 19.1-19.4 (see verify.py for the proofs of the labels)."""

try:
    from . import attempts_19_1, attempts_19_2, attempts_19_3, attempts_19_4, attempts_19_4c
except ImportError:  # imported from inside the folder
    import attempts_19_1
    import attempts_19_2
    import attempts_19_3
    import attempts_19_4
    import attempts_19_4c

ALL = [
    *attempts_19_1.ATTEMPTS,
    *attempts_19_2.ATTEMPTS,
    *attempts_19_3.ATTEMPTS,
    *attempts_19_4.ATTEMPTS,
    *attempts_19_4c.ATTEMPTS,
]
