"""Train a small CNN on the 8x8 handwritten digits that ship with ember (`make demo`).

Uses the PyTorch API through ``import ember as torch``: a DataLoader, Adam, a
OneCycle learning-rate schedule and cross-entropy, with a tqdm progress bar per epoch.
After training it saves a checkpoint with ``torch.save``, reloads it with
``torch.load`` into a fresh model and evaluates again.

    python examples/train_digits.py            # full run (>= 97% test accuracy)
    python examples/train_digits.py --fast     # a few epochs, for the test suite
    python examples/train_digits.py --plot curve.png   # also draw the training curve
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

try:
    import ember as torch
except ImportError:  # run from a source checkout (in-place build): use the repo's ember
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.datasets import Digits
from ember.utils.data import DataLoader, Subset

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional
    tqdm = None


class DigitsCNN(nn.Module):
    """conv(1->32) relu conv(32->64) relu maxpool -> 64x4x4 -> fc 128 -> fc 10."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(x.flatten(1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss_sum += float(F.cross_entropy(out, y, reduction="sum").item())
            correct += int((out.argmax(1) == y).sum().item())
            total += y.shape[0]
    return correct / total, loss_sum / total


def plot_curves(history, path):
    """Draw loss and accuracy per epoch into ``path`` (skipped, with a note, without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("training curve: matplotlib is not installed (pip install matplotlib)")
        return None
    epochs = [h[0] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax_loss.plot(epochs, [h[1] for h in history], "o-", label="train")
    ax_loss.plot(epochs, [h[3] for h in history], "o-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="loss")
    ax_acc.plot(epochs, [100 * h[2] for h in history], "o-", label="train")
    ax_acc.plot(epochs, [100 * h[4] for h in history], "o-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"training curve: {os.path.abspath(path)}")
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (OneCycleLR)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="ember.set_num_threads; the ops of this 8x8-image CNN are too small "
                        "to gain from more threads, and on a shared 2-core machine every "
                        "parallel region can stall behind other processes (0: the "
                        "library's default)")
    p.add_argument("--fast", action="store_true",
                   help="2 epochs on 640 training images (for the test suite)")
    p.add_argument("--train-subset", type=int, default=None,
                   help="train on the first N training images only")
    p.add_argument("--checkpoint", default=None,
                   help="where to save the checkpoint (default: a temporary file)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="write the loss/accuracy curves to this PNG (needs matplotlib)")
    args = p.parse_args(argv)
    if args.fast:
        args.epochs = min(args.epochs, 2)
        args.train_subset = args.train_subset or 640

    t0 = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_set: Digits | Subset = Digits(train=True)
    test_set = Digits(train=False)
    if args.train_subset:
        train_set = Subset(train_set, range(min(args.train_subset, len(train_set))))
    g = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=g,
                              num_workers=args.workers)
    test_loader = DataLoader(test_set, batch_size=256)
    print(f"ember {torch.__version__}: {len(train_set)} training / {len(test_set)} test "
          f"images, {args.epochs} epochs, {torch.get_num_threads()} threads")

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=len(train_loader))
    criterion = nn.CrossEntropyLoss()
    show_bar = tqdm is not None and not args.no_progress

    history: list[tuple[int, float, float, float, float]] = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        it: Any = train_loader
        if show_bar:
            it = tqdm(train_loader, desc=f"epoch {epoch:2d}/{args.epochs}", leave=False,
                      unit="batch", file=sys.stderr)
        run_loss = 0.0
        n = run_correct = 0
        for x, y in it:
            opt.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            opt.step()
            sched.step()
            run_loss += float(loss.item()) * y.shape[0]
            run_correct += int((out.argmax(1) == y).sum().item())
            n += y.shape[0]
            if show_bar:
                it.set_postfix(loss=f"{run_loss / n:.4f}")
        if show_bar:
            it.close()
        acc, test_loss = evaluate(model, test_loader)
        history.append((epoch, run_loss / n, run_correct / n, test_loss, acc))
        print(f"epoch {epoch:2d}  train loss {run_loss / n:.4f}  train accuracy "
              f"{100 * run_correct / n:.2f}%  test loss {test_loss:.4f}  "
              f"test accuracy {100 * acc:.2f}%", flush=True)
    if args.plot:
        plot_curves(history, args.plot)

    # checkpoint: save, reload into a fresh model (and optimizer), evaluate again
    with tempfile.TemporaryDirectory(prefix="ember-demo-") as tmp:
        ckpt = args.checkpoint or os.path.join(tmp, "digits_cnn.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "epoch": args.epochs}, ckpt)
        loaded = torch.load(ckpt)
        size_kib = os.path.getsize(ckpt) / 1024
    fresh = DigitsCNN()
    fresh.load_state_dict(loaded["model"])
    torch.optim.Adam(fresh.parameters(), lr=args.lr).load_state_dict(loaded["optimizer"])
    acc2, _ = evaluate(fresh, test_loader)
    how = f"checkpoint {ckpt if args.checkpoint else 'digits_cnn.pt'} ({size_kib:.0f} KiB)"
    wall = time.perf_counter() - t0
    print(f"reloaded from {how}: test accuracy {100 * acc2:.2f}%")
    print(f"final test accuracy {100 * acc:.2f}%  wall time {wall:.1f} s")
    if abs(acc2 - acc) > 1e-9:
        print("error: the reloaded model does not reproduce the accuracy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
