"""Test-session setup shared by the test suite and the doctests."""

import torch

# One torch thread per test process: with two xdist workers on two cores, more threads only
# oversubscribe the CPU (a loaded machine slows multi-threaded small-tensor work many-fold).
torch.set_num_threads(1)
