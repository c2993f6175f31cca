"""CTC (connectionist temporal classification): the loss of a sequence labelling whose
alignment with the input is unknown (speech, handwriting).

The probability of a label sequence l is the sum over every frame-by-frame path that
reads as l once repeats are merged and blanks dropped. A dynamic programme over the
extended label (blank, l1, blank, l2, ..., blank) sums them: alpha[t, s], the
probability of the paths through frame t that end at position s, in log space so that
long sequences do not underflow. Running it backwards too (beta) gives the gradient.
"""
import numpy as np

from .registry import Bool, Choice, OpError, alias, like_input, register, scipy_special

CTC_ATTRS = {"use_data_lengths": Bool(False), "use_label_lengths": Bool(False),
             "blank_label": Choice("first", "last")}


def _ctc_inputs(attrs):
    names = ["data", "label"]
    if attrs["use_data_lengths"]:
        names.append("data_lengths")
    if attrs["use_label_lengths"]:
        names.append("label_lengths")
    return tuple(names)


def _ctc_shape(attrs, in_shapes):
    data, label = in_shapes[0], in_shapes[1]
    if data is None:
        return in_shapes, [None]
    if len(data) != 3 or data[0] == 0:
        raise OpError(f"CTCLoss: data must be 3-D (time, batch, alphabet incl. the blank) "
                      f"with at least one time step, got {data}")
    if label is not None and (len(label) != 2 or label[0] != data[1]):
        raise OpError(f"CTCLoss: label must be (batch, max label length) with batch "
                      f"{data[1]}, got {label}")
    return [data, label] + [(data[1],)] * (len(in_shapes) - 2), [(data[1],)]


def _checked_lengths(name, values, lowest, highest):
    """Lengths as ints, or an OpError: a NaN, a fraction or a length outside
    lowest..highest is refused, never truncated, wrapped around or silently clipped."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (values < lowest) \
        | (values > highest)
    if bad.any():
        n = int(np.flatnonzero(bad)[0])
        raise OpError(f"CTCLoss: {name}[{n}] is {values[n]}; each must be a whole number "
                      f"from {lowest} to {highest}")
    return values.astype(np.int64)


def _sequences(attrs, data, label, lengths):
    """Per sample: (frames used, label as ints with the blank, blank index)."""
    steps, batch, alphabet = data.shape
    blank = 0 if attrs["blank_label"] == "first" else alphabet - 1
    given = dict(zip([n for n in _ctc_inputs(attrs)[2:]], lengths))
    frames = _checked_lengths("data_lengths", given.get("data_lengths", np.full(batch, steps)),
                              1, steps)               # a path needs at least one frame
    if "label_lengths" in given:
        label_lengths = _checked_lengths("label_lengths", given["label_lengths"], 0,
                                         label.shape[1])
    out = []
    for n in range(batch):
        row = label[n].astype(np.int64)
        if "label_lengths" in given:
            row = row[:label_lengths[n]]
        else:       # padded with -1 (blank last) or 0 (blank first): cut at the first one
            pad = np.flatnonzero(row == (0 if blank == 0 else -1))
            row = row[:pad[0]] if pad.size else row
        if np.any((row < 0) | (row >= alphabet)):
            raise OpError(f"CTCLoss: sample {n}'s label {row.tolist()} holds a value outside "
                          f"0..{alphabet - 1} (the alphabet of data's last axis); pad labels "
                          f"with {0 if blank == 0 else -1} or pass label_lengths")
        extended = np.full(2 * len(row) + 1, blank)
        extended[1::2] = row
        out.append((int(frames[n]), extended, blank))
    return out


def _alphas(logp, ext):
    """log alpha[t, s] for one sample (logp: (T, C) log-probabilities)."""
    steps, size = logp.shape[0], len(ext)
    # s may come from s - 2 when it is a label that differs from the label before it
    skip = np.zeros(size, dtype=bool)                 # blanks (even s) never skip
    skip[3::2] = ext[3::2] != ext[1:-2:2]
    alpha = np.full((steps, size), -np.inf)
    alpha[0, :2] = logp[0, ext[:2]]
    for t in range(1, steps):
        prev = alpha[t - 1]
        stay = prev
        step = np.concatenate(([-np.inf], prev[:-1]))
        jump = np.where(skip, np.concatenate(([-np.inf, -np.inf], prev[:-2]))[:size], -np.inf)
        alpha[t] = np.logaddexp(np.logaddexp(stay, step), jump) + logp[t, ext]
    return alpha, skip


def _betas(logp, ext, skip):
    steps, size = logp.shape[0], len(ext)
    beta = np.full((steps, size), -np.inf)
    beta[-1, -2:] = logp[-1, ext[-2:]]
    back_skip = np.concatenate((skip[2:], [False, False]))[:size]  # s + 2 reached from s
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        step = np.concatenate((nxt[1:], [-np.inf]))
        jump = np.where(back_skip, np.concatenate((nxt[2:], [-np.inf, -np.inf]))[:size],
                        -np.inf)
        beta[t] = np.logaddexp(np.logaddexp(nxt, step), jump) + logp[t, ext]
    return beta


def _ctc_forward(attrs, data, label, *lengths):
    logp = scipy_special().log_softmax(data.astype(np.float64), axis=2)
    loss = np.empty(data.shape[1])
    for n, (frames, ext, _) in enumerate(_sequences(attrs, data, label, lengths)):
        alpha, _ = _alphas(logp[:frames, n], ext)
        loss[n] = -scipy_special().logsumexp(alpha[-1, -2:])
    return loss.astype(data.dtype)


def _ctc_grad_forward(attrs, og, data, label, *lengths):
    logp = scipy_special().log_softmax(data.astype(np.float64), axis=2)
    grad = np.zeros(data.shape)
    for n, (frames, ext, _) in enumerate(_sequences(attrs, data, label, lengths)):
        lp = logp[:frames, n]
        alpha, skip = _alphas(lp, ext)
        beta = _betas(lp, ext, skip)
        log_total = scipy_special().logsumexp(alpha[-1, -2:])
        # paths through (t, s): alpha * beta counts frame t's probability twice
        through = alpha + beta - lp[:, ext]
        mass = np.zeros_like(lp)
        for k in np.unique(ext):
            mass[:, k] = np.exp(scipy_special().logsumexp(through[:, ext == k], axis=1) - log_total)
        grad[:frames, n] = (np.exp(lp) - mass) * og[n]
    return grad.astype(data.dtype)


def _ctc_grad(F, attrs, inputs, outputs, out_grads):
    return [F._ctc_loss_grad(out_grads[0], *inputs, **attrs)] + [None] * (len(inputs) - 1)


register("CTCLoss", placement="host", inputs=("data", "label", "data_lengths", "label_lengths"),
         attrs=dict(CTC_ATTRS), optional_inputs=_ctc_inputs, forward=_ctc_forward,
         checks_values=True,
         infer_shape=_ctc_shape, gradient=_ctc_grad,
         doc="CTCLoss(data (T, N, C) scores, label (N, L)): -log p(label | data) per "
             "sample, summed over all alignments; softmax over C is applied inside.")
register("_ctc_loss_grad", placement="host",
         inputs=("out_grad", "data", "label", "data_lengths", "label_lengths"),
         attrs=dict(CTC_ATTRS),
         optional_inputs=lambda attrs: ("out_grad",) + _ctc_inputs(attrs),
         forward=_ctc_grad_forward, infer_shape=like_input(1),
         doc="Gradient of CTCLoss wrt its data: softmax - the alignments' posterior.")
for _name in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
    alias(_name, "CTCLoss")
