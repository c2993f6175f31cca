"""Recurrent cells: one time step of a recurrent network, as in MXNet 1.x Gluon.

A cell maps (input at time t, states) to (output, new states):

    cell = rnn.LSTMCell(100)
    output, states = cell(x_t, states)               # one step
    outputs, states = cell.unroll(T, x, layout='NTC')  # T steps, a Python loop

Parameters are named and shaped as MXNet's, gates packed the same way (an
LSTM's i2h_weight is (4*hidden, input): input, forget, cell, output gates), so
parameter files line up. For a whole sequence in one call, and a loop that is
traced as ONE node when hybridized, use the layers in `rnn_layer.py`.
"""
from __future__ import annotations

import numpy as np

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import Block
from ..hybrid_block import HybridBlock

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ResidualCell", "ZoneoutCell", "BidirectionalCell"]

LAYOUTS = ("TNC", "NTC")


def check_layout(layout, who):
    if layout not in LAYOUTS:
        raise ValueError(f"{who}: invalid layout {layout!r}; MXNet accepts 'TNC' (time, "
                         f"batch, channels) or 'NTC' (batch, time, channels)")


def _format_sequence(length, inputs, layout, merge, who="unroll"):
    """(inputs as a list of steps or one merged array, time axis, F, batch size)."""
    check_layout(layout, who)
    axis, batch_axis = layout.find("T"), layout.find("N")
    if isinstance(inputs, (Symbol, NDArray)):
        F = symbol if isinstance(inputs, Symbol) else ndarray
        batch = 0 if F is symbol else inputs.shape[batch_axis]
        if F is ndarray and length is not None and inputs.shape[axis] != length:
            raise ValueError(f"{who}: length is {length} but the inputs have "
                             f"{inputs.shape[axis]} steps along axis {axis} (layout "
                             f"{layout}, shape {inputs.shape})")
        if merge is False:
            steps = length if F is symbol else inputs.shape[axis]
            if steps == 1:
                inputs = [F.reshape(inputs, shape=(-3, -2)) if axis == 0 else
                          F.reshape(inputs, shape=(0, -3))]
            else:
                inputs = list(F.split(inputs, num_outputs=steps, axis=axis, squeeze_axis=True))
        return inputs, axis, F, batch
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"{who}: inputs must be an NDArray, a Symbol or a list of them, "
                        f"got {type(inputs).__name__}")
    if length is not None and len(inputs) != length:
        raise ValueError(f"{who}: length is {length} but {len(inputs)} inputs were given")
    F = symbol if isinstance(inputs[0], Symbol) else ndarray
    batch = 0 if F is symbol else inputs[0].shape[0]
    if merge is True:
        inputs = F.stack(*inputs, axis=axis)
    return list(inputs) if merge is not True else inputs, axis, F, batch


def _zeros_like_state(F, x, shape):
    """Zeros of `shape` (batch axis 0 unknown) made from a step input x of shape (N, ...):
    works traced too, where the batch size is not known."""
    if F is ndarray:
        return ndarray.zeros((x.shape[0],) + tuple(shape[1:]), dtype=x.dtype)
    first = F.slice_axis(F.reshape(x, shape=(0, -1)), axis=1, begin=0, end=1)
    return F.broadcast_to(F.zeros_like(first), shape=(0,) + tuple(shape[1:]))


def _mask_padding(F, data, length, valid_length, axis, merge):
    """Zero the steps past each sequence's valid length (SequenceMask along the time
    axis); `data` is one array or a list of steps, the result as `merge` says."""
    if not isinstance(data, (Symbol, NDArray)):
        data = F.stack(*data, axis=axis)
    data = F.SequenceMask(data, valid_length, use_sequence_length=True, axis=axis)
    if not merge:
        data = _split_steps(F, data, length, axis)
    return data


def _split_steps(F, data, length, axis):
    if length == 1:
        return [F.reshape(data, shape=(-3, -2)) if axis == 0 else F.reshape(data, shape=(0, -3))]
    return list(F.split(data, num_outputs=length, axis=axis, squeeze_axis=True))


def _reverse_steps(F, steps, length, valid_length=None):
    """The steps in reverse order; with `valid_length`, each sequence's own first
    valid_length[b] steps reversed and its padding left at the end (SequenceReverse),
    so that a backward direction starts at each sequence's true end."""
    if valid_length is None:
        return list(reversed(steps))
    flipped = F.SequenceReverse(F.stack(*steps, axis=0), valid_length, use_sequence_length=True)
    return _split_steps(F, flipped, length, 0)


class RecurrentCell(Block):
    """The base of every cell: `state_info`, `begin_state`, `reset`, `unroll`."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Restart the step counter (it names the nodes of each step: t0_i2h, t1_i2h...)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size=0):
        """One dict per state: its shape ('shape', batch axis first) and '__layout__'."""
        raise NotImplementedError

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states: `func(name=..., shape=...)` for each (zeros by default)."""
        if self._modified:
            raise RuntimeError(f"{self._describe()} is wrapped by a modifier cell: call "
                               f"begin_state on the modifier instead")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = {k: v for k, v in (info or {}).items() if not k.startswith("__")}
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}begin_state_{self._init_counter}", **info))
        return states

    def _begin_state_like(self, F, step_input, batch_size):
        if F is ndarray:
            return self.begin_state(batch_size, dtype=step_input.dtype)
        return [_zeros_like_state(F, step_input, info["shape"])
                for info in self.state_info(0)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Run the cell `length` steps (a Python loop, so traced it is unrolled: one copy
        of the cell's graph per step). Returns (outputs, final states); outputs are one
        array (merge_outputs=True) or a list of steps (False; None: a list, or one array
        when valid_length is given), as in MXNet.

        valid_length (N,): each sequence's true length in a padded batch. The outputs of
        the padding steps are zeros and the states returned are each sequence's at its
        last true step (the cell still runs over the padding: the results are masked)."""
        self.reset()
        steps, axis, F, batch = _format_sequence(length, inputs, layout, False)
        states = begin_state if begin_state is not None else \
            self._begin_state_like(F, steps[0], batch)
        outputs, history = [], []
        for t in range(length):
            output, states = self(steps[t], states)
            outputs.append(output)
            history.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*per_step, axis=0), valid_length,
                                     use_sequence_length=True, axis=0)
                      for per_step in zip(*history)]
            outputs = _mask_padding(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def __call__(self, inputs, states):
        self._counter += 1
        return super().__call__(inputs, states)

    def _get_activation(self, F, x, activation, **kwargs):
        if isinstance(activation, str):
            return F.Activation(x, act_type=activation, **kwargs)
        return activation(x)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell written with `hybrid_forward(F, inputs, states, **params)`."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)


class _GatedCell(HybridRecurrentCell):
    """What RNN, LSTM and GRU cells share: i2h and h2h weights for `gates` gates."""
    gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        rows = self.gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (self.gates * self._hidden_size, int(np.prod(inputs.shape[1:])))

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = self.gates * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(h, h2h_weight, h2h_bias, num_hidden=rows, name=prefix + "h2h")
        return prefix, i2h, h2h

    def __repr__(self):
        rows, cols = self.i2h_weight.shape      # as MXNet 1.x: LSTMCell(None -> 4*hidden)
        return f"{type(self).__name__}({cols if cols > 0 else None} -> {rows})"


class RNNCell(_GatedCell):
    """Elman RNN cell: h' = activation(W_ih x + b_ih + W_hh h + b_hh)."""
    gates = 1

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"),
                                      self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """Long short-term memory cell. Gates packed in MXNet's order: input, forget, cell
    (the candidate), output. States: [h, c]."""
    gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation, self._recurrent_activation = activation, recurrent_activation

    def _alias(self):
        return "lstm"

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        gates = F.split(F.elemwise_add(i2h, h2h, name=prefix + "plus0"), num_outputs=4,
                        axis=1, name=prefix + "slice")
        act, rec = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, gates[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, gates[1], rec, name=prefix + "f")
        in_transform = self._get_activation(F, gates[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, gates[3], rec, name=prefix + "o")
        # the nodes named as MXNet names them: a step's output is `{prefix}t0_out`
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, act,
                                                               name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """Gated recurrent unit cell. Gates packed as MXNet: reset, update, candidate; the
    reset gate multiplies the hidden projection *with* its bias (as cuDNN does)."""
    gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation, self._recurrent_activation = activation, recurrent_activation

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prev_h = states[0]
        prefix, i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h_n = F.split(i2h, num_outputs=3, axis=1, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.split(h2h, num_outputs=3, axis=1, name=prefix + "h2h_slice")
        rec = self._recurrent_activation
        reset_gate = self._get_activation(F, F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                                          rec, name=prefix + "r_act")
        update_gate = self._get_activation(F, F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
                                           rec, name=prefix + "z_act")
        candidate = self._get_activation(
            F, F.elemwise_add(i2h_n, F.elemwise_mul(reset_gate, h2h_n, name=prefix + "mul0"),
                              name=prefix + "plus2"), self._activation, name=prefix + "h_act")
        keep = F.elemwise_sub(F.ones_like(update_gate, name=prefix + "ones_like0"),
                              update_gate, name=prefix + "minus0")
        next_h = F.elemwise_add(F.elemwise_mul(keep, candidate, name=prefix + "mul1"),
                                F.elemwise_mul(update_gate, prev_h, name=prefix + "mul20"),
                                name=prefix + "out")
        return next_h, [next_h]


class SequentialRNNCell(RecurrentCell):
    """Cells stacked: the output of one is the input of the next. States are the
    children's states, concatenated in order."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def _alias(self):
        return "sequentialrnncell"

    def add(self, cell):
        self.register_child(cell)
        return self

    def state_info(self, batch_size=0):
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        return [s for c in self._children.values()
                for s in c.begin_state(batch_size, func, **kwargs)]

    def _split_states(self, states):
        parts, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            parts.append(list(states[p:p + n]))
            p += n
        if p != len(states):
            raise ValueError(f"{self._describe()}: got {len(states)} states, its cells need "
                             f"{p}")
        return parts

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        for cell, state in zip(self._children.values(), self._split_states(states)):
            inputs, state = cell(inputs, state)
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Unroll each cell over the whole sequence in turn (the states of each cell
        start from zeros unless `begin_state` gives them all)."""
        self.reset()
        cells = list(self._children.values())
        parts = self._split_states(begin_state) if begin_state is not None else \
            [None] * len(cells)
        next_states = []
        for k, (cell, state) in enumerate(zip(cells, parts)):
            last = k == len(cells) - 1
            inputs, state = cell.unroll(length, inputs, state, layout,
                                        merge_outputs=merge_outputs if last else None,
                                        valid_length=valid_length)
            next_states.extend(state)
        return inputs, next_states

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)


class HybridSequentialRNNCell(SequentialRNNCell, HybridRecurrentCell):
    """SequentialRNNCell whose cells are all hybridizable (it hybridizes as one graph)."""

    def _alias(self):
        return "hybridsequentialrnncell"

    def __call__(self, inputs, states):
        return RecurrentCell.__call__(self, inputs, states)

    def hybrid_forward(self, F, inputs, states):
        next_states = []
        for cell, state in zip(self._children.values(), self._split_states(states)):
            inputs, state = cell(inputs, state)
            next_states.extend(state)
        return inputs, next_states


class ModifierCell(HybridRecurrentCell):
    """A cell that wraps another one and changes what it does (Residual, Zoneout...)."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise ValueError(f"{base_cell._describe()} is already wrapped by a modifier cell")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)   # as MXNet
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(batch_size, func, **kwargs)
        finally:
            self.base_cell._modified = True


class DropoutCell(HybridRecurrentCell):
    """Dropout on the input of each step (between stacked cells); it has no state, so
    call it as cell(x, [])."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        if not 0 <= rate < 1:
            raise ValueError(f"DropoutCell: rate must be in [0, 1), got {rate}")
        super().__init__(prefix, params)
        self._rate, self._axes = rate, tuple(axes)

    def _alias(self):
        return "dropout"

    def state_info(self, batch_size=0):
        return []

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Dropout on the whole sequence at once when it is one array (as MXNet; it has
        no state, so valid_length changes nothing)."""
        self.reset()
        merged, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(merged, (Symbol, NDArray)):
            return self.hybrid_forward(F, merged, begin_state or [])
        return super().unroll(length, merged, begin_state, layout, merge_outputs)

    def __repr__(self):
        return f"DropoutCell(rate={self._rate}, axes={self._axes})"


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al., 2016): while training, each output and state unit keeps
    its previous value with probability `zoneout_outputs` / `zoneout_states` instead of
    taking the new one. At inference (no autograd.train_mode) it is the base cell."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise ValueError("ZoneoutCell: a BidirectionalCell cannot be stepped, so it "
                             "cannot be zoned out; wrap the cells inside it instead")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):      # 1 where the new value is taken (Dropout of ones)
            return F.Dropout(F.ones_like(like), p=p)

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        output = F.where(keep_new(p_out, next_output), next_output, prev) if p_out else next_output
        if p_state:
            next_states = [F.where(keep_new(p_state, new), new, old)
                           for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states

    def __repr__(self):
        return (f"ZoneoutCell(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")


class ResidualCell(ModifierCell):
    """Adds the input to the output of the wrapped cell (a residual connection)."""

    def _alias(self):
        return "residual"

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Unroll the base cell (so a BidirectionalCell works too), then add the inputs,
        with the padding steps' inputs zeroed as the outputs there are."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, begin_state, layout,
                                                    merge_outputs, valid_length)
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, (Symbol, NDArray)) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge)
        if valid_length is not None:
            inputs = _mask_padding(F, inputs, length, valid_length, axis, merge)
        if merge:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, x) for o, x in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs `l_cell` forwards and `r_cell` backwards over the sequence and concatenates
    their outputs step by step. It cannot be stepped: use unroll()."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.l_cell, self.r_cell = l_cell, r_cell
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped (the backward "
                                  "direction needs the whole sequence): use unroll()")

    def state_info(self, batch_size=0):
        return self.l_cell.state_info(batch_size) + self.r_cell.state_info(batch_size)

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        return self.l_cell.begin_state(batch_size, func, **kwargs) + \
            self.r_cell.begin_state(batch_size, func, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """As MXNet: with `valid_length`, the backward cell reads each sequence from its
        own last true step (SequenceReverse), its outputs are put back in time order
        the same way, and the padding steps' outputs are zeros."""
        self.reset()
        steps, axis, F, batch = _format_sequence(length, inputs, layout, False)
        reversed_steps = _reverse_steps(F, steps, length, valid_length)
        if begin_state is None:
            begin_state = self.l_cell._begin_state_like(F, steps[0], batch) + \
                self.r_cell._begin_state_like(F, steps[0], batch)
        n_left = len(self.l_cell.state_info())
        l_out, l_states = self.l_cell.unroll(length, steps, begin_state[:n_left], layout,
                                             merge_outputs, valid_length)
        r_out, r_states = self.r_cell.unroll(length, reversed_steps, begin_state[n_left:],
                                             layout, False, valid_length)
        r_out = _reverse_steps(F, r_out, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, (Symbol, NDArray))
        l_out, _, _, _ = _format_sequence(length, l_out, layout, merge_outputs)
        if merge_outputs:
            outputs = F.concat(l_out, F.stack(*r_out, axis=axis), dim=2,
                               name=f"{self._output_prefix}out")
        else:
            outputs = [F.concat(a, b, dim=1, name=f"{self._output_prefix}t{t}")
                       for t, (a, b) in enumerate(zip(l_out, r_out))]
        if valid_length is not None:
            outputs = _mask_padding(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
