"""``ember.optim``: optimizers and learning-rate schedulers (PyTorch's ``torch.optim``)."""
from ember.optim import lr_scheduler, swa_utils
from ember.optim._stateless import swap_in_optimizer_params_and_state
from ember.optim.adadelta import Adadelta
from ember.optim.adafactor import Adafactor
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam, AdamW
from ember.optim.adamax import Adamax
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.muon import Muon
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam",
           "Adamax", "Adadelta", "ASGD", "Rprop", "LBFGS", "Adafactor", "Muon",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]
