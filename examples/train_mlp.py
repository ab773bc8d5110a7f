"""Train an MLP on the flattened 8x8 digits: Linear/BatchNorm1d/ReLU/Dropout, AdamW and
a cosine learning-rate schedule.

    python examples/train_mlp.py [--epochs N] [--fast]
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


def make_model(hidden=128, num_classes=10):
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean().item())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
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
                        shuffle=True, drop_last=True)
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = n = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += float(loss.item()) * y.shape[0]
            n += y.shape[0]
        sched.step()
        if epoch == args.epochs or epoch % 5 == 0:
            print(f"epoch {epoch:3d}  loss {total / n:.4f}  lr {sched.get_last_lr()[0]:.5f}  "
                  f"test accuracy {100 * accuracy(model, test.data, test.targets):.2f}%",
                  flush=True)
    acc = accuracy(model, test.data, test.targets)
    print(f"final test accuracy {100 * acc:.2f}%  wall time {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
