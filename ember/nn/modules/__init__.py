"""The layers of ``ember.nn``."""
from ember.nn.modules.activation import (
                                         CELU,
                                         ELU,
                                         GELU,
                                         GLU,
                                         SELU,
                                         Hardsigmoid,
                                         Hardswish,
                                         Hardtanh,
                                         LeakyReLU,
                                         LogSigmoid,
                                         LogSoftmax,
                                         Mish,
                                         MultiheadAttention,
                                         PReLU,
                                         ReLU,
                                         ReLU6,
                                         Sigmoid,
                                         SiLU,
                                         Softmax,
                                         Softmin,
                                         Softplus,
                                         Softsign,
                                         Tanh,
                                         Tanhshrink,
                                         Threshold,
)
from ember.nn.modules.container import (
                                         ModuleDict,
                                         ModuleList,
                                         ParameterDict,
                                         ParameterList,
                                         Sequential,
)
from ember.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from ember.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d
from ember.nn.modules.flatten import Flatten, Unflatten
from ember.nn.modules.fold import Fold, Unfold
from ember.nn.modules.linear import Bilinear, Identity, LazyLinear, Linear
from ember.nn.modules.loss import (
                                         BCELoss,
                                         BCEWithLogitsLoss,
                                         CosineEmbeddingLoss,
                                         CrossEntropyLoss,
                                         GaussianNLLLoss,
                                         HingeEmbeddingLoss,
                                         HuberLoss,
                                         KLDivLoss,
                                         L1Loss,
                                         MarginRankingLoss,
                                         MSELoss,
                                         NLLLoss,
                                         PoissonNLLLoss,
                                         SmoothL1Loss,
                                         SoftMarginLoss,
                                         TripletMarginLoss,
)
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import (
                                         BatchNorm1d,
                                         BatchNorm2d,
                                         BatchNorm3d,
                                         GroupNorm,
                                         InstanceNorm1d,
                                         InstanceNorm2d,
                                         LayerNorm,
                                         LocalResponseNorm,
                                         RMSNorm,
)
from ember.nn.modules.pooling import (
                                         AdaptiveAvgPool1d,
                                         AdaptiveAvgPool2d,
                                         AdaptiveMaxPool2d,
                                         AvgPool1d,
                                         AvgPool2d,
                                         MaxPool1d,
                                         MaxPool2d,
)
from ember.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from ember.nn.modules.sparse import Embedding
from ember.nn.modules.transformer import (
                                         Transformer,
                                         TransformerDecoder,
                                         TransformerDecoderLayer,
                                         TransformerEncoder,
                                         TransformerEncoderLayer,
)

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AlphaDropout",
           "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
           "BatchNorm3d", "Bilinear", "CELU", "Conv1d", "Conv2d", "ConvTranspose1d",
           "ConvTranspose2d", "CosineEmbeddingLoss", "CrossEntropyLoss", "Dropout", "Dropout1d",
           "Dropout2d", "Dropout3d", "ELU", "Embedding", "Flatten", "Fold", "GELU", "GLU", "GRU",
           "GRUCell", "GaussianNLLLoss", "GroupNorm", "Hardsigmoid", "Hardswish", "Hardtanh",
           "HingeEmbeddingLoss", "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d",
           "KLDivLoss", "L1Loss", "LSTM", "LSTMCell", "LayerNorm", "LazyLinear", "LeakyReLU",
           "LocalResponseNorm",
           "Linear", "LogSigmoid", "LogSoftmax", "MSELoss", "MarginRankingLoss", "MaxPool1d",
           "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention",
           "NLLLoss", "PReLU", "ParameterDict", "ParameterList", "PoissonNLLLoss", "RMSNorm",
           "RNN", "RNNBase", "RNNCell", "ReLU", "ReLU6", "SELU", "Sequential", "SiLU", "Sigmoid",
           "SmoothL1Loss", "SoftMarginLoss", "Softmax", "Softmin", "Softplus", "Softsign", "Tanh",
           "Tanhshrink", "Threshold", "Transformer", "TransformerDecoder",
           "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
           "TripletMarginLoss", "Unflatten", "Unfold"]
