"""Classify the 8x8 digits with an LSTM that reads each image row by row (a sequence
of 8 steps of 8 pixels), with Adam and StepLR.

    python examples/train_lstm.py [--epochs N] [--fast]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

try:
    import ember as torch
except ImportError:  # run from a source checkout (in-place build): use the repo's ember
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ember as torch
import ember.nn as nn
from ember.datasets import Digits
from ember.utils.data import DataLoader, TensorDataset


class RowLSTM(nn.Module):
    def __init__(self, hidden=64, layers=1, num_classes=10, bidirectional=False):
        super().__init__()
        self.lstm = nn.LSTM(8, hidden, num_layers=layers, batch_first=True,
                            bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), num_classes)

    def forward(self, x):  # x: (N, 1, 8, 8) -> sequence (N, 8 rows, 8 pixels)
        out, (h, c) = self.lstm(x.reshape(x.shape[0], 8, 8))
        return self.head(out[:, -1])


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean().item())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fast", action="store_true",
                   help="2 epochs on 640 training images (for the test suite)")
    args = p.parse_args(argv)
    if args.fast:
        args.epochs = min(args.epochs, 2)
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    train, test = Digits(train=True), Digits(train=False)
    n_train = 640 if args.fast else len(train)
    loader = DataLoader(TensorDataset(train.data[:n_train], train.targets[:n_train]),
                        batch_size=args.batch_size,
                        shuffle=True)
    model = RowLSTM(args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.epochs // 3), gamma=0.3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = n = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += float(loss.item()) * y.shape[0]
            n += y.shape[0]
        sched.step()
        print(f"epoch {epoch:3d}  loss {total / n:.4f}  test accuracy "
              f"{100 * accuracy(model, test.data, test.targets):.2f}%", flush=True)
    acc = accuracy(model, test.data, test.targets)
    print(f"final test accuracy {100 * acc:.2f}%  wall time {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
