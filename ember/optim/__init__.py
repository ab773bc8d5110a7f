"""``ember.optim``: optimizers and learning-rate schedulers (PyTorch's ``torch.optim``)."""
from ember.optim import lr_scheduler
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam, AdamW
from ember.optim.optimizer import Optimizer
from ember.optim.rmsprop import RMSprop
from ember.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
