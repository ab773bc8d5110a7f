"""The layers of ``ember.nn``."""
from ember.nn.modules.activation import (CELU, ELU, GELU, GLU, SELU, Hardsigmoid, Hardswish,
                                         Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
                                         MultiheadAttention, PReLU, ReLU, ReLU6, Sigmoid, SiLU,
                                         Softmax, Softmin, Softplus, Softsign, Tanh, Tanhshrink,
                                         Threshold)
from ember.nn.modules.container import (ModuleDict, ModuleList, ParameterDict, ParameterList,
                                        Sequential)
from ember.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from ember.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d
from ember.nn.modules.flatten import Flatten, Unflatten
from ember.nn.modules.linear import Bilinear, Identity, LazyLinear, Linear
from ember.nn.modules.loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,
                                   CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss,
                                   HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                                   NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                                   TripletMarginLoss)
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm,
                                            InstanceNorm1d, InstanceNorm2d, LayerNorm, RMSNorm)
from ember.nn.modules.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool2d,
                                      AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
from ember.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from ember.nn.modules.sparse import Embedding
from ember.nn.modules.transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [n for n in dir() if not n.startswith("_") and n[0].isupper()]
