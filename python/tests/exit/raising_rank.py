"""A rank that raises ends the run: the message names the exception, the exit code is not 0
(tests/CMakeLists.txt runs this on both engines and checks both)."""

import cairn


def main(w):
    if w.rank == w.size - 1:
        raise ValueError(f"rank {w.rank} gives up")
    w.Barrier()  # the other ranks wait here until the run releases them


cairn.launch(main)
