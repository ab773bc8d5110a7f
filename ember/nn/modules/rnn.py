"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first) and cells.

The input projection of a whole sequence is one GEMM per layer and direction; each
time step then costs one GEMM for the hidden projection plus the gate arithmetic. The
LSTM and GRU gate arithmetic is one autograd node per step (forward and backward written
out), and a sequence is split into steps by one node whose backward is one ``stack``."""
from __future__ import annotations

import math

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.linear import _factory_kwargs
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence, pad_packed_sequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_fns = {}


def _functions():
    """The recurrent step Functions (built on first use: autograd loads lazily)."""
    if _fns:
        return _fns
    from ember.autograd import Function

    class _Unbind(Function):
        """x.unbind(0) as one graph node whose backward is one stack (a chain of
        select nodes would write L full-size zero tensors in backward)."""

        @staticmethod
        def forward(ctx, x):
            ctx.shape = tuple(x.shape)
            ctx.dtype = x.dtype
            return tuple(x.select(0, i) for i in range(x.shape[0]))

        @staticmethod
        def backward(ctx, *grads):
            zero = None
            gs = []
            for g in grads:
                if g is None:
                    if zero is None:
                        zero = ember.zeros(*ctx.shape[1:], dtype=ctx.dtype)
                    g = zero
                gs.append(g)
            return ember.stack(gs, 0)

    class _LSTMGates(Function):
        """(x W_ih^T + b_ih, h W_hh^T + b_hh, c_prev) -> (h, c), gates laid out
        [i, f, g, o] as in PyTorch."""

        @staticmethod
        def forward(ctx, xw, hw, c_prev):
            H = c_prev.shape[-1]
            gates = xw + hw
            s = ember.sigmoid(gates)
            i = s.narrow(-1, 0, H)
            f = s.narrow(-1, H, H)
            o = s.narrow(-1, 3 * H, H)
            g = ember.tanh(gates.narrow(-1, 2 * H, H))
            c = f * c_prev
            c.add_(i * g)
            tc = ember.tanh(c)
            h = o * tc
            ctx.save_for_backward(i, f, g, o, tc, c_prev)
            return h, c

        @staticmethod
        def backward(ctx, dh, dc):
            i, f, g, o, tc, c_prev = ctx.saved_tensors
            if dh is None:
                dh = ember.zeros_like(tc)
            do = dh * tc
            do.mul_(o * (1 - o))
            dct = dh * o
            dct.mul_(1 - tc * tc)
            if dc is not None:
                dct.add_(dc)
            di = dct * g
            di.mul_(i * (1 - i))
            df = dct * c_prev
            df.mul_(f * (1 - f))
            dg = dct * i
            dg.mul_(1 - g * g)
            dgates = ember.cat([di, df, dg, do], -1)
            return dgates, dgates, dct * f

    class _GRUGates(Function):
        """(x W_ih^T + b_ih, h W_hh^T + b_hh, h) -> h', gates laid out [r, z, n]."""

        @staticmethod
        def forward(ctx, xw, hw, h):
            H = h.shape[-1]
            rz = ember.sigmoid(xw.narrow(-1, 0, 2 * H) + hw.narrow(-1, 0, 2 * H))
            r = rz.narrow(-1, 0, H)
            z = rz.narrow(-1, H, H)
            hn = hw.narrow(-1, 2 * H, H)
            n = ember.tanh(xw.narrow(-1, 2 * H, H) + r * hn)
            hmn = h - n
            out = n + z * hmn
            ctx.save_for_backward(r, z, n, hn, hmn)
            return out

        @staticmethod
        def backward(ctx, dout):
            r, z, n, hn, hmn = ctx.saved_tensors
            dh = dout * z
            dz = dout * hmn
            dz.mul_(z * (1 - z))
            da = dout * (1 - z)
            da.mul_(1 - n * n)
            dr = da * hn
            dr.mul_(r * (1 - r))
            dxw = ember.cat([dr, dz, da], -1)
            dhw = ember.cat([dr, dz, da * r], -1)
            return dxw, dhw, dh

    class _LSTMSequence(Function):
        """A whole LSTM layer-direction as one graph node. Backward runs the time loop
        in reverse (one small GEMM per step for dh) and forms the weight gradient of
        W_hh with a single GEMM over all steps."""

        @staticmethod
        def forward(ctx, xw, h0, c0, w_hh, b_hh, w_hr, reverse):
            out, h, c, saved = _lstm_sequence(xw, h0, c0, w_hh, b_hh, reverse, True, w_hr)
            ctx.saved = saved
            ctx.reverse = reverse
            ctx.has_bias = b_hh is not None
            ctx.has_proj = w_hr is not None
            ctx.save_for_backward(w_hh, c0, h0, w_hr)
            return out, h, c

        @staticmethod
        def backward(ctx, dout, dh_n, dc_n):
            w_hh, c0, h0, w_hr = ctx.saved_tensors
            S, C, TC, Hprev = ctx.saved
            L = len(S)
            H = c0.shape[-1]
            P = h0.shape[-1]       # hidden state size: proj_size with a projection, else H
            proj = ctx.has_proj
            dh = dh_n if dh_n is not None else ember.zeros_like(h0)
            dc = dc_n if dc_n is not None else ember.zeros_like(c0)
            order = range(L) if ctx.reverse else range(L - 1, -1, -1)
            dgs = [None] * L
            dhs = [None] * L if proj else None
            for t in order:
                if dout is not None:
                    dh = dh + dout[t]
                if proj:           # h = (o * tanh(c)) W_hr^T
                    dhs[t] = dh
                    dh = ember.mm(dh, w_hr)
                s = S[t]
                i = s.narrow(-1, 0, H)
                f = s.narrow(-1, H, H)
                g = s.narrow(-1, 2 * H, H)
                o = s.narrow(-1, 3 * H, H)
                tc = TC[t]
                c_prev = C[t - 1] if not ctx.reverse and t > 0 else (
                    C[t + 1] if ctx.reverse and t < L - 1 else c0)
                # sigmoid'(x) = s (1 - s) for the i, f, o slots at once
                sd = s * s
                ember.sub(s, sd, out=sd)
                dct = dh * o
                t2 = tc * tc
                dct.mul_(ember.rsub(t2, 1.0))
                dct.add_(dc)
                g2 = g * g
                dgates = ember.cat([dct * g, dct * c_prev, dct * i, dh * tc], -1)
                sd.narrow(-1, 2 * H, H).copy_(ember.rsub(g2, 1.0))
                dgates.mul_(sd)
                dgs[t] = dgates
                dc = dct * f
                dh = ember.mm(dgates, w_hh)
            dG = ember.stack(dgs, 0)
            G = dG.shape[-1]
            flat = dG.reshape(-1, G)
            dw = ember.mm(flat.t(), ember.stack(Hprev, 0).reshape(-1, P)) \
                if ctx.needs_input_grad[3] else None
            db = flat.sum(0) if ctx.has_bias and ctx.needs_input_grad[4] else None
            dwr = None
            if proj and ctx.needs_input_grad[5]:
                raw = ember.stack([S[t].narrow(-1, 3 * H, H) * TC[t] for t in range(L)], 0)
                dwr = ember.mm(ember.stack(dhs, 0).reshape(-1, P).t(), raw.reshape(-1, H))
            return dG, dh, dc, dw, db, dwr, None

    _fns.update(unbind=_Unbind, lstm=_LSTMGates, gru=_GRUGates, lstm_seq=_LSTMSequence)
    return _fns


def _tanh(x):
    """tanh(x) = 2 sigmoid(2x) - 1: the core's sigmoid kernel is vectorised and several
    times faster than its tanh on these sizes (absolute error ~1e-7 in float32)."""
    r = ember.sigmoid(x * 2.0)
    return r.mul_(2.0).sub_(1.0)


def _lstm_sequence(xw, h0, c0, w_hh, b_hh, reverse, keep, w_hr=None):
    """Run one LSTM layer-direction over xw (L, N, 4H) = x W_ih^T + b_ih without
    recording a graph; ``keep`` returns what backward needs. With ``w_hr`` (P, H) the
    hidden state is projected: h = (o * tanh(c)) W_hr^T."""
    L = xw.shape[0]
    H = c0.shape[-1]
    wrT = w_hr.t() if w_hr is not None else None
    if b_hh is not None:
        xw = xw + b_hh
    wT = w_hh.t()
    order = range(L - 1, -1, -1) if reverse else range(L)
    outs = [None] * L
    S, C, TC, Hprev = ([None] * L for _ in range(4)) if keep else (None,) * 4
    h, c = h0, c0
    for t in order:
        gates = ember.addmm(xw[t], h, wT)
        s = ember.sigmoid(gates)
        g = s.narrow(-1, 2 * H, H)
        g.copy_(_tanh(gates.narrow(-1, 2 * H, H)))
        c = s.narrow(-1, H, H) * c
        c.add_(s.narrow(-1, 0, H) * g)
        tc = _tanh(c)
        if keep:
            S[t], C[t], TC[t], Hprev[t] = s, c, tc, h
        h = s.narrow(-1, 3 * H, H) * tc
        if wrT is not None:
            h = ember.mm(h, wrT)
        outs[t] = h
    return ember.stack(outs, 0), h, c, (S, C, TC, Hprev)


def _needs_graph(*ts):
    return ember.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _unbind0(x):
    if _needs_graph(x):
        return _functions()["unbind"].apply(x)
    return x.unbind(0)


def _lstm_step(xw, hw, c):
    if _needs_graph(xw, hw, c):
        return _functions()["lstm"].apply(xw, hw, c)
    H = c.shape[-1]
    gates = xw + hw
    s = ember.sigmoid(gates)
    g = ember.tanh(gates.narrow(-1, 2 * H, H))
    c = s.narrow(-1, H, H) * c + s.narrow(-1, 0, H) * g
    return s.narrow(-1, 3 * H, H) * ember.tanh(c), c


def _gru_step(xw, h, w_hh, b_hh):
    hw = F.linear(h, w_hh, b_hh)
    if _needs_graph(xw, hw, h):
        return _functions()["gru"].apply(xw, hw, h)
    H = h.shape[-1]
    rz = ember.sigmoid(xw.narrow(-1, 0, 2 * H) + hw.narrow(-1, 0, 2 * H))
    r = rz.narrow(-1, 0, H)
    z = rz.narrow(-1, H, H)
    n = ember.tanh(xw.narrow(-1, 2 * H, H) + r * hw.narrow(-1, 2 * H, H))
    return n + z * (h - n)


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        kw = _factory_kwargs(device, dtype)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size > 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                params = [Parameter(ember.empty(gate_size, layer_input, **kw)),
                          Parameter(ember.empty(gate_size, real_hidden_size, **kw))]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    params += [Parameter(ember.empty(gate_size, **kw)),
                               Parameter(ember.empty(gate_size, **kw))]
                if proj_size > 0:
                    names.append(f"weight_hr_l{layer}{suffix}")
                    params.append(Parameter(ember.empty(proj_size, hidden_size, **kw)))
                for n, p in zip(names, params):
                    setattr(self, n, p)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        pass

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _layer_weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        p = self._parameters
        w_ih = p[f"weight_ih_l{layer}{suffix}"]
        w_hh = p[f"weight_hh_l{layer}{suffix}"]
        b_ih = p.get(f"bias_ih_l{layer}{suffix}") if self.bias else None
        b_hh = p.get(f"bias_hh_l{layer}{suffix}") if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    def _run_direction(self, x, h0, c0, layer, direction, lens=None):
        """x: (L, N, I). Returns (outputs (L, N, H or proj_size), h_n, c_n)."""
        if lens is not None:
            return self._run_masked(x, h0, c0, layer, direction, lens)
        w_ih, w_hh, b_ih, b_hh = self._layer_weights(layer, direction)
        L = x.shape[0]
        xw = F.linear(x, w_ih, b_ih)  # (L, N, G): one GEMM for the whole sequence
        h, c = h0, c0
        mode = self.mode
        if mode == "LSTM":
            reverse = direction == 1
            w_hr = None
            if self.proj_size > 0:
                w_hr = self._parameters[f"weight_hr_l{layer}{'_reverse' if direction else ''}"]
            if _needs_graph(xw, h, c, w_hh, b_hh, w_hr):
                return _functions()["lstm_seq"].apply(xw, h, c, w_hh, b_hh, w_hr, reverse)
            out, h, c, _ = _lstm_sequence(xw, h, c, w_hh, b_hh, reverse, False, w_hr)
            return out, h, c
        steps = _unbind0(xw)
        order = range(L - 1, -1, -1) if direction == 1 else range(L)
        outs = [None] * L
        if mode == "GRU":
            for t in order:
                h = _gru_step(steps[t], h, w_hh, b_hh)
                outs[t] = h
        else:
            act = ember.tanh if mode == "RNN_TANH" else ember.relu
            for t in order:
                h = act(steps[t] + F.linear(h, w_hh, b_hh))
                outs[t] = h
        return ember.stack(outs, 0), h, c

    def _run_masked(self, x, h0, c0, layer, direction, lens):
        """One layer-direction over padded sequences of lengths ``lens`` ((N, 1) int64):
        a sequence's state stops changing after its last step (and a reversed pass starts
        at its last step), and its outputs past the end are zero."""
        w_ih, w_hh, b_ih, b_hh = self._layer_weights(layer, direction)
        L = x.shape[0]
        steps = _unbind0(F.linear(x, w_ih, b_ih))
        w_hr = None
        if self.mode == "LSTM" and self.proj_size > 0:
            w_hr = self._parameters[f"weight_hr_l{layer}{'_reverse' if direction else ''}"]
        h, c = h0, c0
        outs = [None] * L
        for t in (range(L - 1, -1, -1) if direction == 1 else range(L)):
            if self.mode == "LSTM":
                hn, cn = _lstm_step(steps[t], F.linear(h, w_hh, b_hh), c)
                if w_hr is not None:
                    hn = F.linear(hn, w_hr)
            elif self.mode == "GRU":
                hn, cn = _gru_step(steps[t], h, w_hh, b_hh), None
            else:
                act = ember.tanh if self.mode == "RNN_TANH" else ember.relu
                hn, cn = act(steps[t] + F.linear(h, w_hh, b_hh)), None
            live = lens > t
            h = ember.where(live, hn, h)
            if cn is not None:
                c = ember.where(live, cn, c)
            outs[t] = ember.where(live, hn, ember.zeros_like(hn))
        return ember.stack(outs, 0), h, c

    def _forward_packed(self, input, hx):
        padded, lengths = pad_packed_sequence(input)
        if hx is not None:
            hs = hx if self.mode == "LSTM" else (hx,)
            if any(h.dim() != 3 for h in hs):
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{[h.dim() for h in hs]}-D tensors")
        out, hidden = self._forward_impl(padded, hx, lengths.unsqueeze(1))
        order = input.sorted_indices
        if order is not None:
            out = out.index_select(1, order)
        sizes = [int(v) for v in input.batch_sizes.tolist()]
        data = ember.cat([out[t, :n] for t, n in enumerate(sizes)], 0)
        return PackedSequence(data, input.batch_sizes, input.sorted_indices,
                              input.unsorted_indices), hidden

    def _forward_impl(self, input, hx, lens=None):
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D instead")
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first and lens is None:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        N = input.shape[1]
        D = 2 if self.bidirectional else 1
        H = self.hidden_size
        P = self.proj_size if self.proj_size > 0 else H
        if hx is None:
            h0 = ember.zeros(self.num_layers * D, N, P, dtype=input.dtype)
            c0 = None
            if is_lstm:
                c0 = h0 if P == H else ember.zeros(self.num_layers * D, N, H,
                                                   dtype=input.dtype)
        else:
            if is_lstm:
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            want = 3 if batched else 2
            if is_lstm and (h0.dim() != want or c0.dim() != want):
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} "
                                   f"input, hx and cx should also be {want}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not is_lstm and h0.dim() != want:
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} "
                                   f"input, hx should also be {want}-D but got "
                                   f"{h0.dim()}-D tensor")
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            exp = (self.num_layers * D, N, P)
            if tuple(h0.shape) != exp:
                what = "hidden[0]" if is_lstm else "hidden"
                raise RuntimeError(f"Expected {what} size {exp}, got {list(h0.shape)}")
            exp = (self.num_layers * D, N, H)
            if c0 is not None and tuple(c0.shape) != exp:
                raise RuntimeError(f"Expected hidden[1] size {exp}, got {list(c0.shape)}")
        h0s = _unbind0(h0)
        c0s = _unbind0(c0) if c0 is not None else None
        x = input
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                o, h, c = self._run_direction(x, h0s[k], c0s[k] if c0s else None, layer, d,
                                              lens)
                outs.append(o)
                hn.append(h)
                cn.append(c)
            x = outs[0] if D == 1 else ember.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x
        h_n = ember.stack(hn, 0)
        c_n = ember.stack(cn, 0) if is_lstm else None
        if not batched:
            out = out.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first and lens is None:
            out = out.transpose(0, 1)
        return out, ((h_n, c_n) if is_lstm else h_n)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward_impl(input, hx)


class RNN(RNNBase):
    """Elman RNN with tanh or relu nonlinearity."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)

    def __setattr__(self, name, value):
        if name == "nonlinearity" and "_parameters" not in self.__dict__:
            self.__dict__[name] = value
            return
        super().__setattr__(name, value)

    def extra_repr(self):
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        kw = _factory_kwargs(device, dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(ember.empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prep(self, input, hx, n_states):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = ember.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            hx = z if n_states == 1 else (z, z)
        elif not batched:
            hx = hx.unsqueeze(0) if n_states == 1 else tuple(h.unsqueeze(0) for h in hx)
        return input, hx, batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, batched = self._prep(input, hx, 1)
        pre = F.linear(input, self.weight_ih, self.bias_ih) + \
            F.linear(hx, self.weight_hh, self.bias_hh)
        if self.nonlinearity == "tanh":
            h = ember.tanh(pre)
        elif self.nonlinearity == "relu":
            h = ember.relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        input, (h, c), batched = self._prep(input, hx, 2)
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih),
                          F.linear(h, self.weight_hh, self.bias_hh), c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, h, batched = self._prep(input, hx, 1)
        h = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)
