r"""
# Critics and the contrastive objective of contrastive RL (CRL)

Myers, Ji & Eysenbach, "Horizon Generalization in Reinforcement Learning", ICLR 2025,
[arXiv 2501.02709](https://arxiv.org/abs/2501.02709). "Sec." refers to the implementation brief
`horizon_generalization.md`.

A critic scores a state-action pair against a goal, $f(s, a, g)$; the policy acts greedily,
$\pi(s, g) = \arg\max_a f(s, a, g)$. The paper's claim is that critics whose structure is a
(quasi)metric, $f = -d(\phi(s, a), \psi(g))$, generalise from nearby to distant goals, while
unconstrained critics need not (Sec. 2, 3.1). Four kinds (Sec. 3.2, 4, 5):

| kind  | $f(s, a, g)$                                   | structure                        |
|-------|------------------------------------------------|----------------------------------|
| `l2`  | $-\lVert \phi(s,a) - \psi(g) \rVert_2$         | metric                           |
| `mrn` | $-d_\mathrm{MRN}(\phi(s,a), \phi(g, \varnothing))$ | quasimetric (one encoder)    |
| `dot` | $\phi(s,a)^\top \psi(g)$                       | none (standard CRL)              |
| `mlp` | $\mathrm{MLP}([s, a, g])$                      | none (monolithic)                |

States, actions and goals are integer indices; every network sees their one-hot codes
(Sec. 5: with raw coordinates every critic extrapolates and the comparison is uninformative).

Training uses InfoNCE on the $B \times B$ grid $L_{ij} = f(s_i, a_i, g_j)$ of a batch of positive
triples $(s_i, a_i, g_i)$ (Sec. 3.2): forward (softmax over goals), backward (softmax over
state-actions) or their sum.

Details taken from the official code (`vivekmyers/horizon_generalization`, `src/losses.py`,
`src/utils.py`, `src/networks.py`) beyond the brief:

- `l2` has no epsilon inside the square root; here `torch.cdist` computes it, whose gradient is
  0 (not NaN) at a zero distance.
- MRN splits with `array_split` semantics (chunk sizes may differ by one when the dimension is
  not a multiple of the chunk count); halves are `[:m // 2]` (max-relu) and `[m // 2:]`
  (Euclidean, $+10^{-6}$ inside the square root).
- `symmetric` InfoNCE is the *sum* of forward and backward losses.
- Without resubstitution the logsumexp runs over `logits - 100 I + 1e-6` (the diagonal is pushed
  down by 100, and a 1e-6 is added); the logsumexp penalty is
  `coef * mean_i (logsumexp_j (L_ij + 1e-6))^2` over rows, on the same diagonal-masked logits
  when resubstitution is off.
- Encoders in the official code: Dense layers with LeCun-uniform kernels and zero biases
  (flax), no LayerNorm by default. `init="lecun"` (the default, config key `critic.init`)
  reproduces that; `"torch"` keeps PyTorch's `nn.Linear` initialisation.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from papers.horizon_generalization.config import INITS, LOSS_KINDS

Tensor = torch.Tensor

KINDS = ("l2", "dot", "mrn", "mlp")
MRN_EPS = 1e-6  # inside the square root of each MRN chunk's Euclidean part (official)
NO_RESUBS_BIG = 100.0  # subtracted from the diagonal when resubstitution is off (official)
LSE_EPS = 1e-6  # added to the logits inside the masked / penalty logsumexp (official)
ACTIVATIONS = {"silu": nn.SiLU, "relu": nn.ReLU, "tanh": nn.Tanh}


# --------------------------------------------------------------------------------------------
# Energies on representations (Sec. 3.2)
# --------------------------------------------------------------------------------------------
def l2_logits(phi: Tensor, psi: Tensor) -> Tensor:
    r"""$L_{ij} = -\lVert \phi_i - \psi_j \rVert_2$ for `phi` (B, d), `psi` (B', d) -> (B, B').

    No temperature, no squaring, no epsilon (official `l2` energy)."""
    return -torch.cdist(phi, psi, p=2.0, compute_mode="donot_use_mm_for_euclid_dist")


def dot_logits(phi: Tensor, psi: Tensor) -> Tensor:
    r"""$L_{ij} = \phi_i^\top \psi_j$ for `phi` (B, d), `psi` (B', d) -> (B, B')."""
    return phi @ psi.T


def _mrn_component(x: Tensor, y: Tensor) -> Tensor:
    """One MRN chunk: max-relu over the first half plus Euclidean over the second half."""
    h = x.shape[-1] // 2
    asym = F.relu(x[..., :h] - y[..., :h]).amax(dim=-1)
    sym = torch.sqrt((x[..., h:] - y[..., h:]).square().sum(dim=-1) + MRN_EPS)
    return asym + sym


def mrn_distance(x: Tensor, y: Tensor, chunks: int) -> Tensor:
    r"""Metric residual network quasimetric $d(x, y)$ over the last axis, broadcasting the rest.

    Both vectors are split into `chunks` chunks (`array_split` semantics); each chunk $k$ into
    halves $(x_1, x_2)$, $(y_1, y_2)$:
    $d_k = \max_j \mathrm{relu}(x_{1j} - y_{1j}) + \sqrt{\lVert x_2 - y_2 \rVert^2 + 10^{-6}}$,
    $d = \mathrm{mean}_k\, d_k$. So $d(x, x) = \sqrt{10^{-6}} = 10^{-3}$, $d \ge 0$, the triangle
    inequality holds exactly (also with the epsilon: $\sqrt{\lVert u + v \rVert^2 + \epsilon}
    \le \sqrt{\lVert u \rVert^2 + \epsilon} + \sqrt{\lVert v \rVert^2 + \epsilon}$), and
    $d(x, y) \ne d(y, x)$ in general.
    """
    dim = x.shape[-1]
    if y.shape[-1] != dim:
        raise ValueError(f"mrn_distance: last dims differ ({dim} vs {y.shape[-1]})")
    if chunks < 1 or dim // chunks < 2:
        raise ValueError(
            f"mrn_distance: need chunks >= 1 and >= 2 dims per chunk (dim {dim}, chunks {chunks})"
        )
    if dim % chunks == 0:  # equal chunks: one vectorised call over a chunk axis
        xs = x.unflatten(-1, (chunks, dim // chunks))
        ys = y.unflatten(-1, (chunks, dim // chunks))
        return _mrn_component(xs, ys).mean(dim=-1)
    parts = zip(
        torch.tensor_split(x, chunks, dim=-1), torch.tensor_split(y, chunks, dim=-1), strict=True
    )
    return torch.stack([_mrn_component(xk, yk) for xk, yk in parts], dim=-1).mean(dim=-1)


def mrn_logits(phi: Tensor, psi_goal: Tensor, chunks: int) -> Tensor:
    r"""$L_{ij} = -d_\mathrm{MRN}(\phi_i, \psi_j)$ for (B, d), (B', d) -> (B, B') (broadcast)."""
    return -mrn_distance(phi[:, None, :], psi_goal[None, :, :], chunks)


# --------------------------------------------------------------------------------------------
# Critics (Sec. 3.2, 5 "Critics")
# --------------------------------------------------------------------------------------------
def _linear(n_in: int, n_out: int, init: str, bias: bool = True) -> nn.Linear:
    layer = nn.Linear(n_in, n_out, bias=bias)
    if init == "lecun":  # flax Dense as configured in the official networks.py
        bound = math.sqrt(3.0 / n_in)
        nn.init.uniform_(layer.weight, -bound, bound)
        if bias:
            nn.init.zeros_(layer.bias)
    return layer


def _mlp(
    n_in: int,
    hidden: int,
    n_out: int,
    n_hidden_layers: int,
    act: type[nn.Module],
    init: str,
    out_bias: bool = True,
) -> nn.Sequential:
    """`n_hidden_layers` x (Linear(., hidden), act), then Linear(hidden, n_out)."""
    layers: list[nn.Module] = []
    width = n_in
    for _ in range(n_hidden_layers):
        layers += [_linear(width, hidden, init), act()]
        width = hidden
    layers.append(_linear(width, n_out, init, bias=out_bias))
    return nn.Sequential(*layers)


class Critic(nn.Module):
    r"""Goal-conditioned critic $f(s, a, g)$ on integer state / action / goal indices.

    - `phi(s, a)`: MLP(one-hot(s) ++ one-hot(a)) -> `repr_dim`, `n_hidden_layers` hidden layers
      of `hidden` units (kinds `l2`, `dot`, `mrn`).
    - `psi(g)`: MLP(one-hot(g)) -> `repr_dim`, a separate encoder for `l2` and `dot`.
      For `mrn` the goal goes through the *same* encoder `phi` (Sec. 3.4; otherwise $d$ would
      not be a quasimetric over one space). The official code feeds (future state, future
      action); goals here carry no action, so a goal is embedded as `phi(g, no action)`, with an
      all-zero action one-hot.
    - `mlp` (monolithic, unconstrained): MLP(one-hot(s) ++ one-hot(a) ++ one-hot(g)) -> 1. Its
      first layer is applied factorised, $W_s s + W_a a + W_g g + b$, so that on the $B \times B$
      grid the input projection costs $O(B)$ rows instead of $B^2$ (identical values; Sec. 5,
      7.7). On the grid it is evaluated only on the *distinct* (s, a) rows and distinct goal
      columns of the batch, then gathered back (exact, gradients included).

    `grid_logits(s, a, g)` (also `forward`) gives $L_{ij} = f(s_i, a_i, g_j)$; `pair_logits`
    gives $f(s_n, a_n, g_n)$; `scores(s, g)` gives $f(s_n, a, g_n)$ for every action $a$.
    """

    def __init__(
        self,
        kind: str,
        n_states: int,
        n_actions: int,
        repr_dim: int = 32,
        hidden: int = 128,
        n_hidden_layers: int = 2,
        mrn_chunks: int = 4,
        activation: str = "silu",
        init: str = "lecun",
    ):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"Critic: unknown kind {kind!r}; expected one of {KINDS}")
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"Critic: unknown activation {activation!r}; expected one of {tuple(ACTIVATIONS)}"
            )
        if init not in INITS:
            raise ValueError(f"Critic: unknown init {init!r}; expected 'torch' or 'lecun'")
        if min(n_states, n_actions, repr_dim, hidden, n_hidden_layers) < 1:
            raise ValueError(
                "Critic: n_states, n_actions, repr_dim, hidden and n_hidden_layers must all be >= 1"
            )
        if kind == "mrn" and (mrn_chunks < 1 or repr_dim // mrn_chunks < 2):
            raise ValueError(
                f"Critic: mrn needs >= 2 dims per chunk (repr_dim {repr_dim}, "
                f"mrn_chunks {mrn_chunks})"
            )
        self.kind, self.n_states, self.n_actions = kind, n_states, n_actions
        self.repr_dim, self.mrn_chunks = repr_dim, mrn_chunks
        act = ACTIVATIONS[activation]
        if kind == "mlp":
            # One Linear over the concatenated input [s | a | g]; applied by column blocks.
            self.first = _linear(2 * n_states + n_actions, hidden, init)
            self.first_act = act()
            # No output bias: it shifts every logit equally, so InfoNCE can never learn it.
            self.rest = _mlp(hidden, hidden, 1, n_hidden_layers - 1, act, init, out_bias=False)
        else:
            # For mrn the goal shares phi, so phi's output bias cancels in every distance.
            self.phi_net = _mlp(
                n_states + n_actions,
                hidden,
                repr_dim,
                n_hidden_layers,
                act,
                init,
                out_bias=kind != "mrn",
            )
            if kind in ("l2", "dot"):
                self.psi_net = _mlp(n_states, hidden, repr_dim, n_hidden_layers, act, init)

    # ---- one-hot inputs ------------------------------------------------------------------
    def _check(self, x: Tensor, n: int, name: str) -> Tensor:
        if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
            raise TypeError(f"Critic: {name} must hold integer indices, got {x.dtype}")
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= n):
            raise ValueError(f"Critic: {name} indices must lie in [0, {n})")
        return x.long()

    def _one_hot(self, x: Tensor, n: int, name: str) -> Tensor:
        return F.one_hot(self._check(x, n, name), n).to(self._dtype())

    def _dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def sa_input(self, s: Tensor, a: Tensor | None = None) -> Tensor:
        """one-hot(s) ++ one-hot(a); `a=None` gives an all-zero action block."""
        xs = self._one_hot(s, self.n_states, "s")
        if a is None:
            xa = xs.new_zeros(*xs.shape[:-1], self.n_actions)
        else:
            xa = self._one_hot(a, self.n_actions, "a")
        return torch.cat([xs, xa], dim=-1)

    # ---- encoders (l2, dot, mrn) ---------------------------------------------------------
    def phi(self, s: Tensor, a: Tensor | None = None) -> Tensor:
        """State-action representation (..., repr_dim); `a=None`: no action (zero one-hot)."""
        if self.kind == "mlp":
            raise ValueError("Critic: the monolithic 'mlp' critic has no encoders")
        return self.phi_net(self.sa_input(s, a))

    def psi(self, g: Tensor) -> Tensor:
        """Goal representation (..., repr_dim): `psi_net` for l2/dot, `phi(g, None)` for mrn."""
        if self.kind == "mlp":
            raise ValueError("Critic: the monolithic 'mlp' critic has no encoders")
        if self.kind == "mrn":
            return self.phi(g, None)
        return self.psi_net(self._one_hot(g, self.n_states, "g"))

    def energy_grid(self, x: Tensor, y: Tensor) -> Tensor:
        """Logits grid (B, B') from representations x (B, d), y (B', d)."""
        if self.kind == "l2":
            return l2_logits(x, y)
        if self.kind == "dot":
            return dot_logits(x, y)
        if self.kind == "mrn":
            return mrn_logits(x, y, self.mrn_chunks)
        raise ValueError("Critic: the monolithic 'mlp' critic has no energy")

    def energy_pair(self, x: Tensor, y: Tensor) -> Tensor:
        """Logits (...) of representation pairs x (..., d), y (..., d), broadcasting."""
        if self.kind == "l2":
            return -torch.linalg.vector_norm(x - y, dim=-1)
        if self.kind == "dot":
            return (x * y).sum(dim=-1)
        if self.kind == "mrn":
            return -mrn_distance(x, y, self.mrn_chunks)
        raise ValueError("Critic: the monolithic 'mlp' critic has no energy")

    # ---- monolithic critic ---------------------------------------------------------------
    def _first_blocks(self) -> tuple[Tensor, Tensor, Tensor]:
        """Columns of the first layer as lookup tables W_s (S, h), W_a (A, h), W_g (S, h)."""
        w = self.first.weight.T  # (2S + A, h)
        ns, na = self.n_states, self.n_actions
        return w[:ns], w[ns : ns + na], w[ns + na :]

    def _mlp_head(self, pre: Tensor) -> Tensor:
        return self.rest(self.first_act(pre)).squeeze(-1)

    def _mlp_pair(self, s: Tensor, a: Tensor, g: Tensor) -> Tensor:
        """f(s, a, g) with broadcasting over the index tensors (factorised first layer)."""
        ws, wa, wg = self._first_blocks()
        s = self._check(s, self.n_states, "s")
        a = self._check(a, self.n_actions, "a")
        g = self._check(g, self.n_states, "g")
        return self._mlp_head(ws[s] + wa[a] + wg[g] + self.first.bias)

    def _mlp_grid(self, s: Tensor, a: Tensor, g: Tensor) -> Tensor:
        ws, wa, wg = self._first_blocks()
        s = self._check(s, self.n_states, "s")
        a = self._check(a, self.n_actions, "a")
        g = self._check(g, self.n_states, "g")
        # Distinct rows / columns only: the grid MLP is the expensive part (Sec. 5).
        sa_codes, sa_inv = torch.unique(s * self.n_actions + a, return_inverse=True)
        g_codes, g_inv = torch.unique(g, return_inverse=True)
        rows = ws[sa_codes // self.n_actions] + wa[sa_codes % self.n_actions] + self.first.bias
        cols = wg[g_codes]
        small = self._mlp_head(rows[:, None, :] + cols[None, :, :])  # (n_sa, n_g)
        return small[sa_inv][:, g_inv]

    # ---- the critic ----------------------------------------------------------------------
    def grid_logits(self, s: Tensor, a: Tensor, g: Tensor) -> Tensor:
        """L_ij = f(s_i, a_i, g_j) for s, a (B,), g (B',) -> (B, B')."""
        if s.ndim != 1 or a.shape != s.shape or g.ndim != 1:
            raise ValueError(
                f"grid_logits: need s, a of one shape (B,) and g (B',); got "
                f"{tuple(s.shape)}, {tuple(a.shape)}, {tuple(g.shape)}"
            )
        if self.kind == "mlp":
            return self._mlp_grid(s, a, g)
        return self.energy_grid(self.phi(s, a), self.psi(g))

    forward = grid_logits

    def pair_logits(self, s: Tensor, a: Tensor, g: Tensor) -> Tensor:
        """f(s_n, a_n, g_n) for index tensors of one shape (...) -> (...)."""
        if not (s.shape == a.shape == g.shape):
            raise ValueError(
                f"pair_logits: shapes differ: {tuple(s.shape)}, {tuple(a.shape)}, {tuple(g.shape)}"
            )
        if self.kind == "mlp":
            return self._mlp_pair(s, a, g)
        return self.energy_pair(self.phi(s, a), self.psi(g))

    def scores(self, s: Tensor, g: Tensor) -> Tensor:
        """f(s_n, a, g_n) for every action a: s, g (N,) -> (N, n_actions)."""
        if s.ndim != 1 or g.shape != s.shape:
            raise ValueError(
                f"scores: need s, g of one shape (N,); got {tuple(s.shape)}, {tuple(g.shape)}"
            )
        actions = torch.arange(self.n_actions, device=s.device)
        if self.kind == "mlp":
            return self._mlp_pair(s[:, None], actions[None, :], g[:, None])
        x = self.phi(s[:, None].expand(-1, self.n_actions), actions.expand(len(s), -1))
        return self.energy_pair(x, self.psi(g)[:, None, :])


# --------------------------------------------------------------------------------------------
# Contrastive objective (Sec. 3.2)
# --------------------------------------------------------------------------------------------
def infonce_loss(
    logits: Tensor,
    kind: str = "symmetric",
    resubstitution: bool = True,
    logsumexp_penalty: float = 0.0,
) -> Tensor:
    r"""InfoNCE on the grid $L_{ij} = f(s_i, a_i, g_j)$ (positives on the diagonal).

    - `forward`: $-\mathrm{mean}_i [L_{ii} - \mathrm{logsumexp}_j L_{ij}]$ (softmax over goals);
    - `backward`: $-\mathrm{mean}_i [L_{ii} - \mathrm{logsumexp}_j L_{ji}]$ (softmax over (s, a));
    - `symmetric`: forward + backward (the official sum, not the mean).

    `resubstitution=False` runs the logsumexp over $L - 100 I + 10^{-6}$ (official masking).
    `logsumexp_penalty` adds $c\,\mathrm{mean}_i (\mathrm{logsumexp}_j (L'_{ij} + 10^{-6}))^2$
    with $L'$ the (masked if not resubstituting) logits, over rows as in the official code.
    """
    if logits.ndim != 2 or logits.shape[0] != logits.shape[1]:
        raise ValueError(f"infonce_loss: logits must be square (B, B), got {tuple(logits.shape)}")
    if kind not in LOSS_KINDS:
        raise ValueError(f"infonce_loss: unknown kind {kind!r}; expected one of {LOSS_KINDS}")
    if resubstitution:
        inner = logits
    else:
        eye = torch.eye(logits.shape[0], dtype=logits.dtype, device=logits.device)
        inner = logits - NO_RESUBS_BIG * eye + LSE_EPS
    diag = logits.diagonal()
    loss = logits.new_zeros(())
    if kind in ("forward", "symmetric"):
        loss = loss - (diag - torch.logsumexp(inner, dim=1)).mean()
    if kind in ("backward", "symmetric"):
        loss = loss - (diag - torch.logsumexp(inner, dim=0)).mean()
    if logsumexp_penalty > 0:
        lse = torch.logsumexp(logits + LSE_EPS if resubstitution else inner, dim=1)
        loss = loss + logsumexp_penalty * lse.square().mean()
    return loss


def categorical_accuracy(logits: Tensor) -> Tensor:
    """Fraction of rows whose argmax (first maximum on ties) is the diagonal entry."""
    target = torch.arange(logits.shape[0], device=logits.device)
    return (logits.argmax(dim=1) == target).to(logits.dtype).mean()
