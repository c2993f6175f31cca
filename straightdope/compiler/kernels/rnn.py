"""The fused `RNN` op (all layers, directions and steps) and its gradient, as MXNet's
CPU kernel and cuDNN compute it.

Forward, per layer and direction: ONE product for the input projections of all
steps, (T*N, C) @ (C, G*H), then per step the hidden product h @ W_hh^T and one
loop over the gates that writes h (and c). Backward (BPTT), per layer and
direction: per step, in reverse, one loop over the gates that turns dh (and dc)
into the gates' gradients dG_t, and dh_prev = dG_t @ W_hh; after the loop, the
weight gradients as one product over all steps (dG^T @ inputs), as
`loops.fission_sums` does for a foreach body, and the input's gradient as one
product dG @ W_i2h.

What the backward reads is saved by the forward in ONE buffer, the op's hidden
output `reserve` (ops/rnn.py `reserve_size` gives its layout): per layer but the
last its output (the next layer's input), per layer and direction each step's
gates after their activation (and, for an LSTM, c; for a GRU, the hidden
projection of the candidate, which the reset gate multiplied). At inference
nothing reads it; lowering then gives it no size (lower.py) and the forward
saves nothing.

Modes (a Flag, so each compiles its own small variant): 0 rnn_relu, 1 rnn_tanh,
2 lstm, 3 gru. float32 uses fmath's vectorizable exp32/tanh32 and stays float32.
"""
import numpy as np
from numba import njit, types
from numba.extending import overload

from ..codegen import CodegenError, Flag
from ..numba_internals import DISK_CACHE
from .blas import matmul
from .fmath import exp32, tanh32

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False, error_model="numpy")

MODES = {"rnn_relu": 0, "rnn_tanh": 1, "lstm": 2, "gru": 3}
GATES = (1, 1, 4, 3)          # G: rows of W_i2h per hidden unit
SAVED = (0, 0, 5, 4)          # S: numbers saved per hidden unit and step


ONE = np.float32(1.0)      # float32 constants: with a float32 operand the maths stays
ZERO = np.float32(0.0)     # float32 (an int 1 would make it float64), float64 stays float64


def _exp(x):
    return np.exp(x)


def _th(x):
    return np.tanh(x)


@overload(_exp)
def _exp_typed(x):
    """float32: fmath's vectorizable exp32; otherwise np.exp."""
    return (lambda x: exp32(x)) if x == types.float32 else (lambda x: np.exp(x))


@overload(_th)
def _th_typed(x):
    return (lambda x: tanh32(x)) if x == types.float32 else (lambda x: np.tanh(x))


@njit(**JIT)
def _sigmoid(x):
    return ONE / (ONE + _exp(-x))


@njit(**JIT)
def _offsets(L, D, C, H, G):
    """Offset of each (layer, direction)'s i2h weight, h2h weight, i2h bias and h2h
    bias in the flat parameters (MXNet's order: all weights, then all biases)."""
    offs = np.empty((L * D, 4), np.int64)
    at, size = 0, C
    for layer in range(L):
        for d in range(D):
            k = layer * D + d
            offs[k, 0] = at
            at += G * H * size
            offs[k, 1] = at
            at += G * H * H
        size = D * H
    for k in range(L * D):
        offs[k, 2] = at
        offs[k, 3] = at + G * H
        at += 2 * G * H
    return offs


@njit(**JIT)
def _layer_outputs(T, N, H, L, D, S):
    """Offsets in the reserve: of each layer's output (layers but the last), and of each
    (layer, direction)'s saved gates."""
    outs = np.zeros(L, np.int64)
    saved = np.zeros(L * D, np.int64)
    at = 0
    for layer in range(L):
        if layer < L - 1:
            outs[layer] = at
            at += T * N * D * H
        for d in range(D):
            saved[layer * D + d] = at
            at += T * N * S * H
    return outs, saved


@njit(**JIT)
def forward(x, xo, w, wo, h0, h0o, c0, c0o, y, yo, hy, hyo, cy, cyo, r, ro,
            T, N, C, H, L, D, mode, save, state_out):
    """y (T, N, D*H), hy and cy (L*D, N, H) if state_out, the reserve r if save."""
    G, S = GATES[mode], SAVED[mode]
    offs = _offsets(L, D, C, H, G)
    outs, saved = _layer_outputs(T, N, H, L, D, S)
    dt = y.dtype
    proj = np.empty(T * N * G * H, dt)          # one direction's input projections
    hg = np.empty(N * G * H, dt)                # one step's hidden projection
    h = np.empty(N * H, dt)
    c = np.empty(N * H, dt)
    bias = np.empty(G * H, dt)
    spare = np.empty(0, dt) if save or L == 1 else np.empty(2 * T * N * D * H, dt)
    W = w[wo:]
    xin, xino, cin = x, xo, C
    for layer in range(L):
        # where this layer writes its output: y for the last, else the reserve (to save
        # it) or one of two spare buffers
        if layer == L - 1:
            out, outo = y, yo
        elif save:
            out, outo = r, ro + outs[layer]
        else:
            out, outo = spare, (layer % 2) * T * N * D * H
        Y = out[outo:outo + T * N * D * H].reshape((T, N, D * H))
        for d in range(D):
            k = layer * D + d
            bi, bh = offs[k, 2], offs[k, 3]
            matmul(xin, xino, W, offs[k, 0], proj, 0, T * N, cin, G * H, 0, 1)
            P = proj.reshape((T * N, G * H))
            bias[:] = W[bi:bi + G * H]
            if mode != 3:                        # both biases, except a GRU's h2h
                bias += W[bh:bh + G * H]
            for i in range(T * N):
                for j in range(G * H):
                    P[i, j] += bias[j]
            h[:] = h0[h0o + k * N * H:h0o + (k + 1) * N * H]
            if mode == 2:
                c[:] = c0[c0o + k * N * H:c0o + (k + 1) * N * H]
            Hh = h.reshape((N, H))
            Cc = c.reshape((N, H))
            HG = hg.reshape((N, G * H))
            R = r[ro + saved[k]:ro + saved[k] + T * N * S * H].reshape((T, N, S * H)) \
                if save else r[0:0].reshape((0, 0, S * H))
            for s in range(T):
                t = T - 1 - s if d == 1 else s
                matmul(h, 0, W, offs[k, 1], hg, 0, N, H, G * H, 0, 1)
                Pt = P[t * N:(t + 1) * N]
                for n in range(N):
                    p, q = Pt[n], HG[n]
                    if mode == 2:
                        for j in range(H):
                            ig = _sigmoid(p[j] + q[j])
                            fg = _sigmoid(p[H + j] + q[H + j])
                            gg = _th(p[2 * H + j] + q[2 * H + j])
                            og = _sigmoid(p[3 * H + j] + q[3 * H + j])
                            cn = fg * Cc[n, j] + ig * gg
                            Cc[n, j] = cn
                            Hh[n, j] = og * _th(cn)
                            if save:
                                R[t, n, j] = ig
                                R[t, n, H + j] = fg
                                R[t, n, 2 * H + j] = gg
                                R[t, n, 3 * H + j] = og
                                R[t, n, 4 * H + j] = cn
                    elif mode == 3:
                        for j in range(H):
                            hn = q[2 * H + j] + W[bh + 2 * H + j]
                            rg = _sigmoid(p[j] + q[j] + W[bh + j])
                            zg = _sigmoid(p[H + j] + q[H + j] + W[bh + H + j])
                            ng = _th(p[2 * H + j] + rg * hn)
                            Hh[n, j] = (ONE - zg) * ng + zg * Hh[n, j]
                            if save:
                                R[t, n, j] = rg
                                R[t, n, H + j] = zg
                                R[t, n, 2 * H + j] = ng
                                R[t, n, 3 * H + j] = hn
                    else:
                        for j in range(H):
                            v = p[j] + q[j]
                            if mode == 1:
                                Hh[n, j] = _th(v)
                            else:
                                Hh[n, j] = v if v > 0 else ZERO
                    Y[t, n, d * H:(d + 1) * H] = Hh[n]
            if state_out:
                hy[hyo + k * N * H:hyo + (k + 1) * N * H] = h
                if mode == 2:
                    cy[cyo + k * N * H:cyo + (k + 1) * N * H] = c
        xin, xino, cin = out, outo, D * H


@njit(**JIT)
def backward(x, xo, w, wo, h0, h0o, c0, c0o, y, yo, r, ro, dy, dyo, dhy, dhyo, dcy, dcyo,
             dx, dxo, dw, dwo, dh0, dh0o, dc0, dc0o, T, N, C, H, L, D, mode):
    """Gradients of x, the flat parameters, h0 and c0 from those of y, hy and cy (dhy,
    dcy: zeros where the state outputs have none), with the reserve the forward saved."""
    G, S = GATES[mode], SAVED[mode]
    offs = _offsets(L, D, C, H, G)
    outs, saved = _layer_outputs(T, N, H, L, D, S)
    dt = y.dtype
    W = w[wo:]
    DW = dw[dwo:dwo + offs[L * D - 1, 3] + G * H]
    dgi = np.empty(T * N * G * H, dt)           # gates' gradients, i2h side
    dgh = np.empty(T * N * G * H, dt) if mode == 3 else dgi    # h2h side (differ for GRU)
    hprev = np.empty(T * N * H, dt)             # each step's h_(t-1), for dW_hh
    dh = np.empty(N * H, dt)
    dc = np.empty(N * H, dt)
    dhp = np.empty(N * H, dt)
    widest = max(C, D * H)
    dxin = np.empty(T * N * widest, dt)         # the layer input's gradient
    part = np.empty(T * N * widest, dt) if D == 2 else dxin
    dyl = dy[dyo:dyo + T * N * D * H].copy()    # the layer output's gradient
    for layer in range(L - 1, -1, -1):
        cin = C if layer == 0 else D * H
        xin, xino = (x, xo) if layer == 0 else (r, ro + outs[layer - 1])
        out, outo = (y, yo) if layer == L - 1 else (r, ro + outs[layer])
        Y = out[outo:outo + T * N * D * H].reshape((T, N, D * H))
        DY = dyl.reshape((T, N, D * H))
        for d in range(D):
            k = layer * D + d
            R = r[ro + saved[k]:ro + saved[k] + T * N * S * H].reshape((T, N, S * H))
            DGI = dgi.reshape((T, N, G * H))
            DGH = dgh.reshape((T, N, G * H))
            HP = hprev.reshape((T, N, H))
            H0 = h0[h0o + k * N * H:h0o + (k + 1) * N * H].reshape((N, H))
            dh[:] = dhy[dhyo + k * N * H:dhyo + (k + 1) * N * H]
            if mode == 2:
                dc[:] = dcy[dcyo + k * N * H:dcyo + (k + 1) * N * H]
                C0 = c0[c0o + k * N * H:c0o + (k + 1) * N * H].reshape((N, H))
            else:
                C0 = H0
            DH = dh.reshape((N, H))
            DC = dc.reshape((N, H))
            for s in range(T):                   # the forward's steps, last first
                t = s if d == 1 else T - 1 - s
                first = t == T - 1 if d == 1 else t == 0
                tp = t + 1 if d == 1 else t - 1
                for n in range(N):
                    for j in range(H):
                        HP[t, n, j] = H0[n, j] if first else Y[tp, n, d * H + j]
                    dhn = DH[n]
                    for j in range(H):
                        dhn[j] += DY[t, n, d * H + j]
                    gi, gh = DGI[t, n], DGH[t, n]
                    if mode == 2:
                        for j in range(H):
                            ig, fg, gg = R[t, n, j], R[t, n, H + j], R[t, n, 2 * H + j]
                            og, cn = R[t, n, 3 * H + j], R[t, n, 4 * H + j]
                            cp = C0[n, j] if first else R[tp, n, 4 * H + j]
                            tc = _th(cn)
                            dcn = DC[n, j] + dhn[j] * og * (ONE - tc * tc)
                            gi[j] = dcn * gg * ig * (ONE - ig)
                            gi[H + j] = dcn * cp * fg * (ONE - fg)
                            gi[2 * H + j] = dcn * ig * (ONE - gg * gg)
                            gi[3 * H + j] = dhn[j] * tc * og * (ONE - og)
                            DC[n, j] = dcn * fg
                    elif mode == 3:
                        for j in range(H):
                            rg, zg = R[t, n, j], R[t, n, H + j]
                            ng, hn = R[t, n, 2 * H + j], R[t, n, 3 * H + j]
                            dpn = dhn[j] * (ONE - zg) * (ONE - ng * ng)
                            gi[j] = dpn * hn * rg * (ONE - rg)
                            gi[H + j] = dhn[j] * (HP[t, n, j] - ng) * zg * (ONE - zg)
                            gi[2 * H + j] = dpn
                            gh[j] = gi[j]
                            gh[H + j] = gi[H + j]
                            gh[2 * H + j] = dpn * rg
                            dhn[j] *= zg             # the direct path h_(t-1) -> h_t
                    else:
                        for j in range(H):
                            v = Y[t, n, d * H + j]
                            if mode == 1:
                                gi[j] = dhn[j] * (ONE - v * v)
                            else:
                                gi[j] = dhn[j] if v > 0 else ZERO
                # dh_(t-1) = dG_t @ W_hh (+ the GRU's direct path)
                matmul(dgh, t * N * G * H, W, offs[k, 1], dhp, 0, N, G * H, H, 0, 0)
                if mode == 3:
                    dh += dhp
                else:
                    dh[:] = dhp
            dh0[dh0o + k * N * H:dh0o + (k + 1) * N * H] = dh
            if mode == 2:
                dc0[dc0o + k * N * H:dc0o + (k + 1) * N * H] = dc
            # after the loop, one product each over all steps: dW_i2h, dW_hh, the input's
            # gradient; and the biases' as column sums
            matmul(dgi, 0, xin, xino, DW, offs[k, 0], G * H, T * N, cin, 1, 0)
            matmul(dgh, 0, hprev, 0, DW, offs[k, 1], G * H, T * N, H, 1, 0)
            matmul(dgi, 0, W, offs[k, 0], part if d == 1 else dxin, 0, T * N, G * H, cin, 0, 0)
            if d == 1:
                dxin[:T * N * cin] += part[:T * N * cin]
            bi, bh = offs[k, 2], offs[k, 3]
            DW[bi:bi + G * H] = 0
            DW[bh:bh + G * H] = 0
            GI = dgi.reshape((T * N, G * H))
            GH = dgh.reshape((T * N, G * H))
            for i in range(T * N):
                for j in range(G * H):
                    DW[bi + j] += GI[i, j]
                    DW[bh + j] += GH[i, j]
        if layer == 0:
            dx[dxo:dxo + T * N * C] = dxin[:T * N * C]
        else:
            dyl[:] = dxin[:T * N * D * H]


# ------------------------------------------------------------------ emitters
def _sizes(cg, node):
    """(T, N, C, H, L, D, mode) as code."""
    a = node.attrs
    x = cg.ref(node.inputs[0])
    T, N, C = x.dims
    return (T, N, C, cg.lit(a["state_size"]), cg.lit(a["num_layers"]),
            cg.lit(2 if a["bidirectional"] else 1), Flag(MODES[a["mode"]]))


def emit_rnn(cg, node):
    a = node.attrs
    if cg.is_train and a["p"] > 0:
        raise CodegenError(f"RNN: dropout between layers (p={a['p']}) is not implemented "
                           f"while training")
    lstm = a["mode"] == "lstm"
    x, w, h0 = (cg.ref(e) for e in node.inputs[:3])
    c0 = cg.ref(node.inputs[3]) if lstm else h0
    y = cg.out(node, 0)
    hy = cg.out(node, 1) if a["state_outputs"] else y
    cy = cg.out(node, 2) if a["state_outputs"] and lstm else hy
    reserve = cg.out(node, node.num_outputs - 1)
    save = Flag(0 not in reserve.shape)      # lowering gives an unread reserve no size
    cg.call("rnn", "forward", x.args, w.args, h0.args, c0.args, y.args, hy.args, cy.args,
            reserve.args, *_sizes(cg, node), save, Flag(a["state_outputs"]))


def emit_rnn_backward(cg, node):
    lstm = node.attrs["mode"] == "lstm"
    refs = [cg.ref(e) for e in node.inputs]
    x, w, h0 = refs[:3]
    c0 = refs[3] if lstm else h0
    y, reserve, dy, dhy = refs[3 + lstm:7 + lstm]
    dcy = refs[7 + lstm] if lstm else dhy
    dx, dw, dh0 = (cg.out(node, k) for k in range(3))
    dc0 = cg.out(node, 3) if lstm else dh0
    cg.call("rnn", "backward", x.args, w.args, h0.args, c0.args, y.args, reserve.args,
            dy.args, dhy.args, dcy.args, dx.args, dw.args, dh0.args, dc0.args,
            *_sizes(cg, node))


EMITTERS = {"RNN": emit_rnn, "_rnn_grad": emit_rnn_backward}
