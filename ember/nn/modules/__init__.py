"""The layers of ``ember.nn``: each submodule's ``__all__`` is re-exported here."""
from ember.nn.modules import (
    activation,
    adaptive,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    lazy,
    linear,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    syncbn,
    transformer,
    upsampling,
)
from ember.nn.modules.activation import *  # noqa: F403
from ember.nn.modules.adaptive import *  # noqa: F403
from ember.nn.modules.container import *  # noqa: F403
from ember.nn.modules.conv import *  # noqa: F403
from ember.nn.modules.distance import *  # noqa: F403
from ember.nn.modules.dropout import *  # noqa: F403
from ember.nn.modules.flatten import *  # noqa: F403
from ember.nn.modules.fold import *  # noqa: F403
from ember.nn.modules.lazy import *  # noqa: F403
from ember.nn.modules.linear import *  # noqa: F403
from ember.nn.modules.loss import *  # noqa: F403
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.normalization import *  # noqa: F403
from ember.nn.modules.padding import *  # noqa: F403
from ember.nn.modules.pixelshuffle import *  # noqa: F403
from ember.nn.modules.pooling import *  # noqa: F403
from ember.nn.modules.rnn import *  # noqa: F403
from ember.nn.modules.sparse import *  # noqa: F403
from ember.nn.modules.syncbn import *  # noqa: F403
from ember.nn.modules.transformer import *  # noqa: F403
from ember.nn.modules.upsampling import *  # noqa: F403

__all__ = sorted({"Module", *activation.__all__, *adaptive.__all__, *container.__all__,
                  *conv.__all__, *distance.__all__, *dropout.__all__, *flatten.__all__,
                  *fold.__all__, *lazy.__all__, *linear.__all__, *loss.__all__,
                  *normalization.__all__, *padding.__all__, *pixelshuffle.__all__,
                  *pooling.__all__, *rnn.__all__, *sparse.__all__, *syncbn.__all__,
                  *transformer.__all__,
                  *upsampling.__all__})
